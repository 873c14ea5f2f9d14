// Usage in the canvas against a real `wright serve` (harness.ts) in Debian's Chromium (issue
// 34): the context meter and the conversation's cost beside the input grow as a conversation
// goes, and Admin → Usage shows the day's spend by agent. The harness's model speaks the
// compatible dialect, which reports no usage: the ledger estimates it, priced here at a
// dollar a thousand tokens so the figures move visibly.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, startFakeModel, startWright, type FakeModel, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

describe.skipIf(!built || !hasChromium || !hasWright)('usage in the canvas against wright serve', () => {
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
    fake = await startFakeModel(() => ({ text: 'Here is a longer answer, so that the reply has some tokens to count in it.' }));
    wright = await startWright(fake, { config: '[agent]\ncontext_window = 32000\n' });
    await call('PUT', '/api/settings/prices', {
      connection: 'env:openai_compatible',
      model: 'e2e-model',
      input_per_mtok: 1000,
      cached_input_per_mtok: 1000,
      output_per_mtok: 1000,
    });
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

  const meterValue = async () => Number(await page.getByRole('meter', { name: 'Context used' }).getAttribute('aria-valuenow'));
  const costText = () => page.getByLabel('Conversation cost').textContent();

  it('the context meter and the conversation cost follow the conversation, and the Usage page shows the day by agent', async () => {
    const previous = page.url();
    await page.getByRole('button', { name: '+ New conversation' }).click();
    await page.waitForURL((url) => /\/c\/[^/]+$/.test(url.pathname) && url.href !== previous);
    const message = page.getByLabel('Message', { exact: true });
    await message.fill('Tell me something.');
    await message.press('Enter');
    await expect.poll(meterValue, { timeout: 20_000 }).toBeGreaterThan(0);
    const firstContext = await meterValue();
    expect(await page.getByRole('meter', { name: 'Context used' }).getAttribute('aria-valuemax')).toBe('32000');
    await expect.poll(costText).toMatch(/\$\d+\.\d+/);
    const firstCost = await costText();

    await message.fill('And one more thing, please.');
    await message.press('Enter');
    await expect.poll(meterValue, { timeout: 20_000 }).toBeGreaterThan(firstContext);
    await expect.poll(costText).not.toBe(firstCost);

    const report = await call('GET', '/api/usage?by=agent&since=24h');
    expect(report.rows.map((row: { key: string }) => row.key)).toEqual(['default']);
    expect(report.totals.requests).toBe(2);

    await page.goto(`${wright.url}/admin/usage/default`);
    await page.getByRole('button', { name: 'Agent', exact: true }).click();
    await page.getByRole('button', { name: 'Agent', pressed: true }).waitFor();
    await page.getByLabel('Period').selectOption({ label: 'Last 24 hours' });
    const table = page.getByRole('table', { name: 'Usage by agent' });
    const row = table.getByRole('row').filter({ hasText: 'default' });
    await row.waitFor();
    const cost = `$${report.totals.cost_usd < 0.01 ? report.totals.cost_usd.toFixed(4) : report.totals.cost_usd.toFixed(2)}`;
    await expect.poll(() => row.textContent()).toContain(cost);
    await page.getByRole('figure').filter({ hasText: 'Cost (USD) by agent' }).waitFor();
    expect(await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href')).toBe('/api/usage/export?since=24h');
  });
});
