// Connecting a model from the canvas, against a real `wright serve` started without any
// provider variables (harness.ts, `noModel`) and the scripted model on the OpenAI wire: the
// chat first says there is no model and points to Settings; a connection to the scripted
// server is added there and tested, its model list is shown, a model is picked for the agent
// and a chat answers with it; another model is picked and the next chat uses it, without a
// restart. The key typed in never comes back from the API.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { FAKE_MODEL_KEY, hasWright, startFakeModel, startWright, type FakeModel, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

describe.skipIf(!built || !hasChromium || !hasWright)('connecting a model from the Settings page', () => {
  let fake: FakeModel;
  let wright: Wright;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    // The reply names the model asked, so the page shows which model answered.
    fake = await startFakeModel((request) => ({ text: `Answered by ${request.model}.` }), { models: ['alpha-model', 'beta-model'] });
    wright = await startWright(fake, { noModel: true });
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: '+ New conversation' }).waitFor();
  });
  afterEach(async (context) => {
    const refused = fake.refused.splice(0);
    if (context.task.result?.state === 'fail' || refused.length) {
      await page.screenshot({ path: join(import.meta.dirname, '..', 'test-results', 'settings.png') }).catch(() => {});
      console.error(`wright serve output:\n${wright.log().slice(-4000)}`);
    }
    expect(refused.map((refusal) => refusal.body), 'requests the model refused').toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
    await wright?.stop();
    await fake?.close();
  });

  const chat = async (text: string) => {
    const previous = page.url();
    await page.getByRole('button', { name: '+ New conversation' }).click();
    await page.waitForURL((url) => /\/c\/[^/]+$/.test(url.pathname) && url.href !== previous);
    const message = page.getByLabel('Message');
    await message.fill(text);
    await message.press('Enter');
  };

  const pickModel = async (model: string) => {
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    const card = page.getByRole('region', { name: 'Model of default' });
    await card.getByLabel('Connection').selectOption({ label: 'Scripted server' });
    // The model list comes from the provider (GET /v1/models of the scripted server).
    await card.getByLabel('Model', { exact: true }).locator('option', { hasText: model }).waitFor({ state: 'attached' });
    await card.getByLabel('Model', { exact: true }).selectOption(model);
    await card.getByRole('button', { name: 'Save model' }).click();
    await card.getByRole('status').filter({ hasText: `Saved: ${model}` }).waitFor();
  };

  it('adds and tests a connection, picks a model for the agent, chats, switches the model and chats again', async () => {
    // No model yet: the notice says so once and leads to Settings.
    await chat('hello?');
    const notice = page.getByRole('region', { name: 'Connect a model to start talking' });
    await notice.waitFor();
    expect(await notice.textContent()).toMatch(/^(?:(?!No model is configured)[\s\S])*No model is configured(?:(?!No model is configured)[\s\S])*$/);
    await notice.getByRole('link', { name: 'Open Settings' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/admin/settings'));

    const form = page.getByRole('form', { name: 'Add a connection' });
    await form.getByLabel('Connection name').fill('Scripted server');
    await form.getByLabel('Provider').selectOption('openai_compatible');
    await form.getByLabel('Base URL').fill(fake.baseUrl);
    await form.getByLabel('API key').fill('sk-wrong-key-000000');
    await form.getByRole('button', { name: 'Add connection' }).click();
    const card = page.getByRole('region', { name: 'Connection Scripted server' });
    await card.getByText('key: set (…0000)').waitFor();

    // A wrong key: the test shows the provider's own error.
    await card.getByRole('button', { name: 'Test' }).click();
    await card.getByRole('alert').filter({ hasText: 'Incorrect API key provided' }).waitFor();

    // The right key: connected, and the models are listed.
    await card.getByRole('button', { name: 'Edit' }).click();
    await card.getByLabel('API key').fill(FAKE_MODEL_KEY);
    await card.getByRole('button', { name: 'Save connection' }).click();
    await card.getByRole('button', { name: 'Test' }).click();
    await card.getByRole('status').filter({ hasText: 'the provider lists 2 models' }).waitFor();
    await card.getByRole('button', { name: 'Show models' }).click();
    const listed = card.getByRole('list', { name: 'Models of Scripted server' });
    await listed.getByText('alpha-model').waitFor();
    await listed.getByText('beta-model').waitFor();

    await pickModel('alpha-model');
    await chat('first question');
    await page.locator('.msg-assistant').filter({ hasText: 'Answered by alpha-model.' }).waitFor();

    await pickModel('beta-model');
    await chat('second question');
    await page.locator('.msg-assistant').filter({ hasText: 'Answered by beta-model.' }).waitFor();
    expect(fake.requests.map((request) => request.model)).toEqual(['alpha-model', 'beta-model']);

    // The key never comes back from the API.
    const response = await fetch(`${wright.url}/api/settings/connections`, { headers: { authorization: `Bearer ${wright.token}` } });
    const text = await response.text();
    expect(text).toContain('Scripted server');
    expect(text).not.toContain(FAKE_MODEL_KEY);
  });

  it('shows the profile the model got and why, and a profile chosen by hand is used by the next run', async () => {
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    const card = page.getByRole('region', { name: "Profile of default's model" });
    await card.getByText('beta-model').first().waitFor();
    // A model at a local address without a size in its name or from its server: standard.
    await card.getByRole('list', { name: 'Why this profile' }).getByText('beta-model on a server at a local address').waitFor();
    await card.getByLabel('Profile', { exact: true }).selectOption('small_local');
    await card.getByLabel('Temperature').fill('abc');
    await card.getByRole('button', { name: 'Save profile' }).click();
    await card.getByRole('alert').filter({ hasText: 'Temperature must be a number' }).waitFor();
    await card.getByLabel('Temperature').fill('0.4');
    await card.getByRole('button', { name: 'Save profile' }).click();
    await card.getByRole('status').filter({ hasText: 'Saved. The next run uses it.' }).waitFor();
    await card.getByText('Small local model').first().waitFor();
    await card.getByRole('list', { name: 'Why this profile' }).getByText('the Settings page sets temperature').waitFor();

    await chat('hello again');
    await page.locator('.msg-assistant').filter({ hasText: 'Answered by beta-model.' }).waitFor();
    expect(fake.requests.at(-1)?.temperature).toBe(0.4);

    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await card.getByRole('button', { name: 'Reset' }).click();
    await card.getByRole('status').filter({ hasText: 'Reset: the chosen profile applies again.' }).waitFor();
    expect(await card.getByLabel('Temperature').inputValue()).toBe('');
  });
});
