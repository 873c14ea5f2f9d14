// The admin and marketplace pages against a real `wright serve` (harness.ts) in Debian's
// Chromium. Rollbacks are clicked in the admin page and checked through the API: the system
// prompt reads v1's text again and the tool runs v1's code again. Then a tool published
// through the API is installed into a second agent from the marketplace page, enabled after
// its code is shown, and invoked.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, startFakeModel, startWright, type FakeModel, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

const SCHEMA = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

describe.skipIf(!built || !hasChromium || !hasWright)('admin and marketplace pages against wright serve', () => {
  let fake: FakeModel;
  let wright: Wright;
  let browser: Browser;
  let page: Page;

  /** Calls the API with the token; fails the test with the server's error on a non-2xx. */
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
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true })).newPage();
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: '+ New conversation' }).waitFor();
  });
  afterEach(async (context) => {
    // the fake model refuses histories OpenAI would refuse; any refusal fails the test
    const refused = fake.refused.splice(0);
    if (context.task.result?.state === 'fail' || refused.length) {
      const name = context.task.name.replace(/\W+/g, '-').slice(0, 60);
      await page.screenshot({ path: join(import.meta.dirname, '..', 'test-results', `admin-${name}.png`) }).catch(() => {});
      console.error(`wright serve output:\n${wright.log().slice(-4000)}`);
    }
    expect(refused.map((refusal) => ({ status: refusal.status, body: refusal.body, messages: refusal.request.messages })), 'requests the model refused').toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
    await wright?.stop();
    await fake?.close();
  });

  it('rolls back the system prompt and a tool from the admin page, and the old versions are in effect', async () => {
    await call('POST', '/api/agents', { id: 'rollbacker' });
    const v1 = await call('POST', '/api/agents/rollbacker/documents/system_prompt', { operation: 'replace', content: 'You are a careful archivist.', reason: 'first draft' });
    const v2 = await call('POST', '/api/agents/rollbacker/documents/system_prompt', { operation: 'replace', content: 'You are a reckless pirate.', reason: 'experiment' });
    expect(v2.version).toBeGreaterThan(v1.version);
    const created = await call('POST', '/api/agents/rollbacker/tools/create_tool/invoke', {
      name: 'greet',
      description: 'Greets someone.',
      parameter_schema: SCHEMA,
      code: 'return "hello " + args.name;',
    });
    await call('POST', '/api/agents/rollbacker/tools/update_tool/invoke', { name: 'greet', code: 'return "ahoy " + args.name;', reason: 'pirate voice' });
    expect(await call('POST', '/api/agents/rollbacker/tools/greet/invoke', { name: 'Ada' })).toBe('ahoy Ada');

    // The system prompt: the timeline shows both versions with their reasons and the diff.
    await page.goto(`${wright.url}/admin/prompt/rollbacker`);
    const prompt = page.getByRole('region', { name: 'System prompt' });
    await expect.poll(() => prompt.getByTestId('system_prompt-content').textContent()).toBe('You are a reckless pirate.');
    await prompt.getByText('experiment').waitFor();
    await prompt.locator('.diff-del').filter({ hasText: 'careful archivist' }).waitFor();
    await prompt.locator('.diff-add').filter({ hasText: 'reckless pirate' }).waitFor();
    await prompt.getByRole('button', { name: `Roll back to v${v1.version}` }).click();
    await prompt.getByLabel('Rollback reason').fill('the pirate scared users');
    await prompt.getByRole('button', { name: 'Confirm rollback' }).click();
    await prompt.getByText('the pirate scared users').waitFor();
    await expect.poll(() => prompt.getByTestId('system_prompt-content').textContent()).toBe('You are a careful archivist.');
    const document = await call('GET', '/api/agents/rollbacker/documents/system_prompt');
    expect(document.content).toBe('You are a careful archivist.');
    expect(document.version).toBe(v2.version + 1);

    // The tool: roll back to version 1 from its card's history.
    await page.goto(`${wright.url}/admin/tools/rollbacker`);
    const card = page.getByRole('region', { name: 'Tool greet' });
    await card.getByText('Code and history').click();
    await card.locator('.diff-add').filter({ hasText: 'ahoy' }).waitFor();
    await card.getByRole('button', { name: `Roll back to v${created.version}` }).click();
    await card.getByLabel('Rollback reason').fill('back to plain greetings');
    await card.getByRole('button', { name: 'Confirm rollback' }).click();
    await card.getByText('back to plain greetings').waitFor();
    await card.locator('h2').getByText('v3').waitFor();
    expect(await call('POST', '/api/agents/rollbacker/tools/greet/invoke', { name: 'Ada' })).toBe('hello Ada');
  });

  it('installs a published tool into a second agent from the marketplace, enables it after review and runs it', async () => {
    await call('POST', '/api/agents', { id: 'publisher' });
    await call('POST', '/api/agents', { id: 'shopper' });
    await call('POST', '/api/agents/publisher/tools/create_tool/invoke', {
      name: 'shout',
      description: 'Shouts a name back.',
      parameter_schema: SCHEMA,
      code: 'return args.name.toUpperCase() + "!";',
    });
    const published = await call('POST', '/api/market/publish', { agent: 'publisher', kind: 'tool', name: 'shout' });

    await page.goto(`${wright.url}/market`);
    await page.getByLabel('Search the marketplace').fill('shout');
    await page.getByRole('button', { name: 'Listing shout' }).click();
    await page.waitForURL((url) => url.pathname === '/market/tool/shout');
    await page.locator('.listing-code').filter({ hasText: 'toUpperCase' }).waitFor();
    await page.getByText(published.hash.slice(0, 16)).first().waitFor();
    await page.getByLabel('Install into agent').selectOption('shopper');
    await page.getByRole('button', { name: 'Install into shopper' }).click();
    await page.getByRole('status').filter({ hasText: 'Installed into shopper as shout' }).waitFor();

    // Installed tools start disabled: invoking fails until the admin has read and enabled it.
    const installed = (await call('GET', '/api/agents/shopper/agent-tools')).find((tool: { name: string }) => tool.name === 'shout');
    expect(installed.enabled).toBe(false);
    expect(installed.provenance.hash).toBe(published.hash);

    await page.goto(`${wright.url}/admin/tools/shopper`);
    const card = page.getByRole('region', { name: 'Tool shout' });
    await card.getByText(`market: shout v${published.version}`).waitFor();
    await card.getByRole('button', { name: 'Review and enable…' }).click();
    await card.locator('.review-code').filter({ hasText: 'toUpperCase' }).waitFor();
    await card.getByRole('button', { name: 'Enable shout' }).click();
    await card.getByText('enabled', { exact: true }).waitFor();
    expect(await call('POST', '/api/agents/shopper/tools/shout/invoke', { name: 'ada' })).toBe('ADA!');
  });

  it('exports a listing as a JSON download, and importing a tampered copy shows its code and the server’s hash error', async () => {
    await page.goto(`${wright.url}/market/tool/shout`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /^Export v\d+ as JSON$/ }).click()]);
    expect(download.suggestedFilename()).toMatch(/^shout-v\d+\.wright\.json$/);
    const file = JSON.parse(readFileSync(await download.path(), 'utf8'));
    expect(file.bundle.code).toContain('toUpperCase');
    expect(file.hash).toBe((await call('GET', '/api/market/listings/tool/shout')).listing.latest_hash);

    const tampered = { ...file, bundle: { ...file.bundle, code: 'return "pwned";' } };
    await page.goto(`${wright.url}/market`);
    await page.getByLabel('Bundle file').setInputFiles({ name: 'tampered.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(tampered)) });
    await page.locator('.review pre.code').filter({ hasText: 'return "pwned";' }).waitFor();
    await page.getByText(file.hash, { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Import into the marketplace' }).click();
    await page.getByRole('alert').filter({ hasText: 'hash does not match' }).waitFor();
    expect((await call('GET', '/api/market/listings/tool/shout')).versions.every((version: { bundle: { code: string } }) => !version.bundle.code.includes('pwned'))).toBe(true);
  });
});
