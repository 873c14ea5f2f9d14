// The Skills admin page against a real `wright serve` (harness.ts) in Debian's Chromium: a
// skill written through the API and changed once is listed; its history shows the change, a
// rollback clicked in the page brings version 1 back (checked through the API); it is switched
// off from the page; and a skill folder chosen in the page's file input is imported.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, startFakeModel, startWright, type FakeModel, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

const skillMd = (steps: string) => `---\nname: expense-report\ndescription: Summarise the month's expenses into a report.\n---\n# Steps\n${steps}\n`;

describe.skipIf(!built || !hasChromium || !hasWright)('the Skills page against wright serve', () => {
  let fake: FakeModel;
  let wright: Wright;
  let browser: Browser;
  let page: Page;

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(wright.url + path, {
      method,
      headers: { authorization: `Bearer ${wright.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  };

  beforeAll(async () => {
    fake = await startFakeModel(() => ({ text: 'Hello.' }));
    wright = await startWright(fake);
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: '+ New conversation' }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
    await wright?.stop();
    await fake?.close();
  });

  it('lists a skill, rolls it back from its history, switches it off and imports a folder', async () => {
    await call('POST', '/api/agents', { id: 'skiller' });
    await call('POST', '/api/agents/skiller/skills', { content: skillMd('1. Query the expenses table.'), reason: 'first draft' });
    await call('PUT', '/api/agents/skiller/skills/expense-report', { content: skillMd('1. Guess the totals.'), reason: 'experiment' });

    await page.goto(`${wright.url}/admin/skills/skiller`);
    const list = page.getByRole('table', { name: 'Skill list' });
    await list.getByText("Summarise the month's expenses into a report.").waitFor();
    await list.getByRole('button', { name: 'expense-report' }).click();
    const card = page.getByRole('region', { name: 'Skill expense-report' });
    await expect.poll(() => card.getByTestId('skill-content').textContent()).toContain('1. Guess the totals.');
    await card.getByText('experiment').waitFor();
    await card.locator('.diff-del').filter({ hasText: 'Query the expenses table' }).waitFor();
    await card.locator('.diff-add').filter({ hasText: 'Guess the totals' }).waitFor();
    await card.getByRole('button', { name: 'Roll back to v1' }).click();
    await card.getByLabel('Rollback reason').fill('guessing is wrong');
    await card.getByRole('button', { name: 'Confirm rollback' }).click();
    await card.getByText('guessing is wrong').waitFor();
    await expect.poll(() => card.getByTestId('skill-content').textContent()).toContain('1. Query the expenses table.');
    const skill = await call('GET', '/api/agents/skiller/skills/expense-report');
    expect([skill.version, skill.body]).toEqual([3, '# Steps\n1. Query the expenses table.\n']);

    await card.getByRole('button', { name: 'Switch off' }).click();
    await card.getByRole('button', { name: 'Switch on' }).waitFor();
    expect((await call('GET', '/api/agents/skiller/skills/expense-report')).enabled).toBe(false);

    // A folder on disk, as a person picks it: the browser names each file under the folder's name.
    const root = mkdtempSync(join(tmpdir(), 'skill-folder-'));
    const folder = join(root, 'pdf-forms');
    mkdirSync(folder);
    writeFileSync(join(folder, 'SKILL.md'), '---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\nRead fields.md first.\n');
    writeFileSync(join(folder, 'fields.md'), '- name: full legal name\n');
    writeFileSync(join(folder, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe]));
    await page.getByLabel('Skill folder').setInputFiles(folder);
    await page.getByText('Imported pdf-forms as version 1. Left out: pdf-forms/logo.png.').waitFor();
    await page.getByRole('region', { name: 'Skill pdf-forms' }).locator('summary code').filter({ hasText: 'fields.md' }).waitFor();
    const imported = await call('GET', '/api/agents/skiller/skills/pdf-forms');
    expect(imported.resources).toEqual({ 'fields.md': '- name: full legal name\n' });
  });
});
