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

  it('runs no script the app did not ship: injected inline scripts and handlers are refused', async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (message) => message.type() === 'error' && violations.push(message.text()));
    await page.goto(url!);
    await page.getByLabel('Access token').waitFor();
    // What an HTML injection would try; page.evaluate itself is the test's, not the page's.
    const ran = await page.evaluate(async () => {
      const flags = window as unknown as Record<string, boolean>;
      const script = document.createElement('script');
      script.textContent = 'window.inlineRan = true';
      document.head.appendChild(script);
      const image = document.createElement('img');
      image.setAttribute('onerror', 'window.handlerRan = true');
      image.src = 'data:,not-an-image';
      document.body.appendChild(image);
      const link = document.createElement('a');
      link.href = 'javascript:window.urlRan = true';
      document.body.appendChild(link);
      link.click();
      await new Promise((done) => setTimeout(done, 200));
      return { inline: flags.inlineRan ?? false, handler: flags.handlerRan ?? false, url: flags.urlRan ?? false };
    });
    expect(ran).toEqual({ inline: false, handler: false, url: false });
    expect(violations.filter((text) => text.includes('Content Security Policy')).length).toBeGreaterThanOrEqual(3);
    await page.close();
  });
});
