// The installable app on a phone (issue 30): the built canvas served by the real `wright serve`
// to Chromium emulating a Pixel 7 (viewport, touch, device scale, mobile user agent), with the
// scripted model of harness.ts. The main flows at that width — send a message, answer a form,
// approve a call, open a notification's conversation — with nothing wider than the screen; and
// the service worker: installed and controlling the page, the shell served offline (and no API
// answer in its cache), a push shown as a notification that names its conversation.
//
// Needs `npm run build`, the debug binary built after it, and Chromium (skipped without them).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { devices, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, scenarioOf, startFakeModel, startWright, toolResults, type FakeModel, type ModelReply, type ModelRequest, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'sw.js'));

const FORM = { title: 'Trip', blocks: [{ type: 'form', submitLabel: 'Save trip', fields: [{ name: 'city', label: 'City', type: 'text', required: true }] }] };

function model(request: ModelRequest): ModelReply {
  const results = toolResults(request);
  if (results.length > 0) return { text: `Model received: ${results[results.length - 1]}` };
  switch (scenarioOf(request)) {
    case 'form':
      return { toolCalls: [{ name: 'render_blocks', arguments: FORM }] };
    case 'approve':
      return { toolCalls: [{ name: 'set_state', arguments: { key: 'seat', value: 'window' } }] };
    case 'notify':
      return { toolCalls: [{ name: 'notify', arguments: { title: 'Gate change', text: 'Your flight now leaves from gate B12.' } }] };
    default:
      return { text: 'Hello from the phone test.' };
  }
}

describe.skipIf(!built || !hasChromium || !hasWright)('the canvas on a phone, installed', () => {
  let fake: FakeModel;
  let wright: Wright;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${wright.url}${path}`, { method, headers: { Authorization: `Bearer ${wright.token}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

  /** Nothing on the page is wider than the phone's screen (no sideways scrolling). */
  const fitsTheScreen = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);

  /** Opens the menu (the sidebar slides in at this width) and starts a conversation with the scenario's message. */
  const startConversation = async (scenario: string) => {
    const previous = page.url();
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('button', { name: '+ New conversation' }).click();
    await page.waitForURL((url) => /\/c\/[^/]+$/.test(url.pathname) && url.href !== previous);
    const message = page.getByLabel('Message', { exact: true });
    await message.fill(`scenario:${scenario}`);
    await message.press('Enter');
    return page.url().split('/c/')[1];
  };

  beforeAll(async () => {
    fake = await startFakeModel(model);
    wright = await startWright(fake);
    browser = await launch();
    context = await browser.newContext({ ...devices['Pixel 7'] });
    page = await context.newPage();
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Menu' }).waitFor();
  });
  afterEach(async (task) => {
    if (task.task.result?.state === 'fail') {
      const name = task.task.name.replace(/\W+/g, '-').slice(0, 60);
      await page.screenshot({ path: join(import.meta.dirname, '..', 'test-results', `phone-${name}.png`) }).catch(() => {});
      console.error(`wright serve output:\n${wright.log().slice(-4000)}`);
    }
  });
  afterAll(async () => {
    await browser?.close();
    await wright?.stop();
    await fake?.close();
  });

  it('sends a message and shows the answer, within the screen', async () => {
    expect(page.viewportSize()?.width).toBeLessThan(500);
    await startConversation('hello');
    await page.getByRole('region', { name: 'Chat' }).getByText('Hello from the phone test.').waitFor();
    expect(await fitsTheScreen()).toBe(true);
  });

  it('exports the conversation as Markdown and JSON from its header', async () => {
    for (const [link, extension] of [['Export Markdown', '.md'], ['Export JSON', '.json']] as const) {
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: link }).click()]);
      expect(download.suggestedFilename()).toMatch(new RegExp(`^new-conversation-[a-z0-9]{8}\\${extension}$`));
      const text = readFileSync((await download.path())!, 'utf8');
      if (extension === '.md') expect(text).toContain('scenario:hello');
      else expect(JSON.parse(text).events.map((event: { kind: string }) => event.kind)).toEqual(['user', 'assistant']);
    }
  });

  it('answers a form: the canvas tab opens on it and the answer reaches the model', async () => {
    await startConversation('form');
    const canvas = page.getByRole('region', { name: 'Canvas' });
    await canvas.getByLabel(/City/).fill('Lisbon');
    expect(await fitsTheScreen()).toBe(true);
    await canvas.getByRole('button', { name: 'Save trip' }).click();
    await page.getByRole('tab', { name: /Chat/ }).click();
    await page.getByRole('region', { name: 'Chat' }).getByText(/Model received: .*Lisbon/).waitFor();
  });

  it('approves a call its policy asks about', async () => {
    expect((await call('PUT', '/api/agents/default/tools/set_state/policy', { policy: 'ask' })).status).toBe(200);
    try {
      await startConversation('approve');
      const card = page.getByRole('group', { name: 'Approve set_state?' });
      await card.waitFor();
      expect(await fitsTheScreen()).toBe(true);
      await card.getByRole('button', { name: 'Approve', exact: true }).click();
      await page.getByRole('region', { name: 'Chat' }).getByText(/Model received: /).waitFor();
      const state = await (await call('GET', '/api/agents/default/state/seat')).json();
      expect(state.value).toBe('window');
    } finally {
      await call('PUT', '/api/agents/default/tools/set_state/policy', { policy: null });
    }
  });

  it('opens a notification’s conversation from the notification', async () => {
    const conversation = await startConversation('notify');
    await page.getByRole('region', { name: 'Chat' }).getByText(/Model received: /).waitFor();
    // Elsewhere in the app when it arrives.
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('link', { name: /Settings/ }).click();
    const notification = page.getByRole('article', { name: 'Gate change' });
    await notification.waitFor();
    expect(await fitsTheScreen()).toBe(true);
    await notification.getByRole('button', { name: 'Open' }).click();
    await page.waitForURL((url) => url.pathname.endsWith(`/c/${conversation}`));
    await page.getByRole('region', { name: 'Chat' }).getByText('scenario:notify').waitFor();
  });

  it('the admin pages and Settings → Devices fit the screen', async () => {
    await page.goto(`${wright.url}/admin/settings`);
    await page.getByRole('region', { name: 'Devices' }).getByText('No device is subscribed.').waitFor();
    expect(await fitsTheScreen()).toBe(true);
    await page.goto(`${wright.url}/admin/tools/default`);
    await page.getByRole('heading').first().waitFor();
    expect(await fitsTheScreen()).toBe(true);
  });

  it('is installable: a manifest with icons, a service worker that controls the page', async () => {
    const manifestHref = await page.locator('link[rel="manifest"]').getAttribute('href');
    const manifest = await (await fetch(new URL(manifestHref!, wright.url))).json();
    expect(manifest.display).toBe('standalone');
    for (const size of ['192x192', '512x512']) {
      const icon = manifest.icons.find((entry: { sizes: string }) => entry.sizes === size);
      const response = await fetch(new URL(icon.src, wright.url));
      expect(response.headers.get('content-type')).toBe('image/png');
    }
    const state = await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.state);
    expect(state).toBe('activated');
    await page.reload();
    await expect.poll(() => page.evaluate(() => navigator.serviceWorker.controller?.scriptURL ?? null)).toBe(`${wright.url}/sw.js`);
  });

  it('serves the app shell offline, and keeps no API answer', async () => {
    const conversationUrl = page.url();
    await context.setOffline(true);
    try {
      await page.goto(`${wright.url}/agents/default`);
      // The app ran from the cache and says the server cannot be reached.
      await page.getByRole('heading', { name: 'Wright is not answering' }).waitFor();
    } finally {
      await context.setOffline(false);
    }
    const cached = await page.evaluate(async () => {
      const urls: string[] = [];
      for (const name of await caches.keys()) for (const request of await (await caches.open(name)).keys()) urls.push(new URL(request.url).pathname);
      return urls;
    });
    expect(cached).toContain('/');
    expect(cached.some((path) => path.startsWith('/assets/'))).toBe(true);
    expect(cached.filter((path) => path.startsWith('/api') || path.startsWith('/mcp'))).toEqual([]);
    await page.goto(conversationUrl);
  });

  it('shows a push as a notification whose address is its conversation', async () => {
    const origin = new URL(wright.url).origin;
    await context.grantPermissions(['notifications'], { origin });
    const cdp = await context.newCDPSession(page);
    const registrations: { registrationId: string; scopeURL: string }[] = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (event) => registrations.push(...event.registrations));
    await cdp.send('ServiceWorker.enable');
    await expect.poll(() => registrations.find((entry) => entry.scopeURL === `${origin}/`)).toBeTruthy();
    const registrationId = registrations.find((entry) => entry.scopeURL === `${origin}/`)!.registrationId;
    // A conversation of its own, made through the API as another device would.
    const conversation = (await (await call('POST', '/api/agents/default/conversations', { title: 'From a push' })).json()).id as string;
    expect((await call('POST', `/api/conversations/${conversation}/messages`, { text: 'scenario:pushed' })).status).toBe(202);
    // What the server sends (crates/wright-server/src/push.rs), after the push service decrypted it.
    const message = { title: 'default is waiting for you', body: 'A question waits for your answer.', url: `/agents/default/c/${conversation}`, tag: `waiting-${conversation}` };
    await cdp.send('ServiceWorker.deliverPushMessage', { origin, registrationId, data: JSON.stringify(message) });
    const shown = async () =>
      page.evaluate(async () => (await (await navigator.serviceWorker.ready).getNotifications()).map((notification) => ({ title: notification.title, body: notification.body, url: notification.data?.url })));
    await expect.poll(shown, { timeout: 10_000 }).toEqual([{ title: message.title, body: message.body, url: message.url }]);
    // The address the worker opens on a tap is the conversation's page.
    await page.goto(new URL(message.url, wright.url).href);
    await page.getByRole('region', { name: 'Chat' }).getByText('scenario:pushed').waitFor();
    await page.getByRole('region', { name: 'Chat' }).getByText('Hello from the phone test.').waitFor();
  });
});
