// Against a running Wright: WRIGHT_URL (e.g. http://127.0.0.1:8080) and WRIGHT_TOKEN.
// Logs in with the token and expects the default agent with an empty workspace.
// Skipped when the variables are absent (the lead's end-to-end suite sets them).
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';

const url = process.env.WRIGHT_URL;
const token = process.env.WRIGHT_TOKEN;

describe.skipIf(!url || !token || !hasChromium)('login against a running Wright', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('refuses a wrong token, then logs in and shows the default agent', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(url!);
    await page.getByLabel('Access token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('That token is not right.').waitFor();

    await page.getByLabel('Access token').fill(token!);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/agents\/default$/);
    expect(await page.getByRole('combobox', { name: 'Agent' }).inputValue()).toBe('default');
    await page.getByRole('button', { name: /New conversation/ }).first().waitFor();

    // The session is a cookie: a reload stays signed in.
    await page.reload();
    await page.getByRole('combobox', { name: 'Agent' }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });
});
