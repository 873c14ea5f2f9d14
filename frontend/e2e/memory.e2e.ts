// The memory page against a real `wright serve` (harness.ts) in Debian's Chromium: the model
// stores a memory through its `memory` tool, the person sees it on the memory page, edits it and
// forgets it there, and each change is in the system message of the model's next request.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, startFakeModel, startWright, type FakeModel, type ModelRequest, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

/** Stores a memory when asked to remember; answers plainly otherwise. */
function script(request: ModelRequest) {
  const last = request.messages[request.messages.length - 1];
  const firstUser = request.messages.find((message) => message.role === 'user');
  // The person's message reaches the model headed by the time it was sent (issue 32).
  if (last.role === 'user' && last.content?.endsWith('remember that I prefer tea') && firstUser) {
    return { toolCalls: [{ name: 'memory', arguments: { action: 'store', layer: 'long', category: 'preference', content: 'Prefers tea over coffee' } }] };
  }
  return { text: last.role === 'tool' ? 'Noted.' : 'OK.' };
}

describe.skipIf(!built || !hasChromium || !hasWright)('the memory page against wright serve', () => {
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

  /** Sends a message and waits for the model's answer; returns the system message it was sent with. */
  const say = async (conversation: string, text: string): Promise<string> => {
    const before = fake.requests.length;
    await call('POST', `/api/conversations/${conversation}/messages`, { text });
    for (let tries = 0; tries < 200; tries++) {
      const detail = await call('GET', `/api/conversations/${conversation}`);
      const events = detail.events as { kind: string }[];
      if (detail.conversation.status === 'idle' && fake.requests.length > before && events[events.length - 1].kind === 'assistant') break;
      await new Promise((done) => setTimeout(done, 50));
    }
    const system = fake.requests[fake.requests.length - 1].messages[0];
    expect(system.role).toBe('system');
    return system.content ?? '';
  };

  beforeAll(async () => {
    fake = await startFakeModel(script);
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

  it('shows what the model stored; an edit and a forget there reach the next system message', async () => {
    const conversation = (await call('POST', '/api/agents/default/conversations', { title: 'memory' })).id as string;
    await say(conversation, 'remember that I prefer tea');
    expect(fake.refused).toEqual([]);

    // Reached from the navigation, like the other admin pages.
    await page.getByRole('link', { name: 'Memory', exact: true }).click();
    await page.waitForURL(/\/admin\/memory\/default$/);
    const item = page.getByTestId('memory').filter({ hasText: 'Prefers tea over coffee' });
    await item.waitFor();
    expect(await item.textContent()).toContain('agent');
    // While it is edited its text is in a field, not the item's text: hold on to it by id.
    const id = await item.getAttribute('data-memory-id');
    const editing = page.locator(`[data-memory-id="${id}"]`);

    await editing.getByRole('button', { name: 'Edit' }).click();
    await editing.getByLabel('Memory text').fill('Prefers green tea');
    // The edit is stored when the server answers the PATCH, not when the page shows it.
    const stored = page.waitForResponse((response) => response.url().includes('/memories/') && response.request().method() === 'PATCH');
    await editing.getByRole('button', { name: 'Save' }).click();
    expect((await stored).ok()).toBe(true);
    const edited = page.getByTestId('memory').filter({ hasText: 'Prefers green tea' });
    await edited.waitFor();
    let system = await say(conversation, 'what do I drink?');
    expect(system).toContain('Prefers green tea');
    expect(system).not.toContain('over coffee');

    await edited.getByRole('button', { name: 'Forget' }).click();
    await edited.getByText('Forget this memory?').waitFor();
    const forgotten = page.waitForResponse((response) => response.url().endsWith('/forget') && response.request().method() === 'POST');
    await edited.getByRole('button', { name: 'Forget' }).click();
    expect((await forgotten).ok()).toBe(true);
    await page.getByText('No memories here.').waitFor();
    system = await say(conversation, 'and now?');
    expect(system).not.toContain('green tea');

    await page.getByRole('tab', { name: 'Archived' }).click();
    const archived = page.getByTestId('memory').filter({ hasText: 'Prefers green tea' });
    await archived.getByText('forgotten').waitFor();
    await archived.getByRole('button', { name: 'History' }).click();
    await expect.poll(() => archived.getByTestId('memory-change').allTextContents()).toEqual([
      expect.stringMatching(/^store agent/),
      expect.stringMatching(/^edit admin/),
      expect.stringMatching(/^forget admin/),
    ]);
    await archived.getByRole('button', { name: 'Restore' }).click();
    await page.getByText('No memories here.').waitFor();
    system = await say(conversation, 'back?');
    expect(system).toContain('Prefers green tea');
    expect(fake.refused).toEqual([]);
  });

  it('/newsession typed in the chat opens a conversation in a new session, grouped in the list', async () => {
    const conversation = (await call('POST', '/api/agents/default/conversations', { title: 'before' })).id as string;
    await page.goto(`${wright.url}/agents/default/c/${conversation}`);
    await page.getByLabel('Message', { exact: true }).fill('/newsession Taxes');
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname.includes('/c/') && !url.pathname.endsWith(conversation));
    const current = page.getByRole('listitem', { name: 'Session Taxes' });
    await current.getByText('current').waitFor();
    await current.getByRole('link', { name: /Taxes/ }).waitFor();
    // The conversation it was typed in stays in the session before, and got no message.
    const before = await call('GET', `/api/conversations/${conversation}`);
    expect(before.events).toEqual([]);
    const sessions = await call('GET', '/api/agents/default/sessions');
    expect(sessions[0].name).toBe('Taxes');
    expect(sessions[1].conversation_ids).toContain(conversation);
    expect(fake.refused).toEqual([]);
  });

  it('renames, archives, brings back and deletes a conversation, deleting only after a confirmation', async () => {
    const conversation = (await call('POST', '/api/agents/default/conversations', { title: 'scratch' })).id as string;
    await page.goto(`${wright.url}/agents/default/c/${conversation}`);
    const header = page.locator('.workspace-head');
    await header.getByRole('button', { name: 'Rename' }).click();
    await header.getByLabel('Conversation title').fill('Holiday plans');
    await header.getByRole('button', { name: 'Rename' }).click();
    await page.getByRole('heading', { name: 'Holiday plans' }).waitFor();
    const link = page.locator('nav').getByRole('link', { name: /Holiday plans/ });
    await link.first().waitFor();

    await header.getByRole('button', { name: 'Archive' }).click();
    await page.waitForURL((url) => !url.pathname.includes(conversation));
    await expect.poll(() => page.locator('.session-conversations').getByText('Holiday plans').count()).toBe(0);
    await page.locator('.archived-conversations summary').click();
    const archivedItem = page.locator('.archived-conversation').filter({ hasText: 'Holiday plans' });
    await archivedItem.getByRole('button', { name: 'Unarchive' }).click();
    await page.locator('.session-conversations').getByText('Holiday plans').waitFor();

    await page.goto(`${wright.url}/agents/default/c/${conversation}`);
    await header.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Delete this conversation?' });
    await dialog.waitFor();
    expect((await call('GET', `/api/conversations/${conversation}`)).conversation.title).toBe('Holiday plans');
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL((url) => !url.pathname.includes(conversation));
    const gone = await fetch(`${wright.url}/api/conversations/${conversation}`, { headers: { authorization: `Bearer ${wright.token}` } });
    expect(gone.status).toBe(404);
  });
});
