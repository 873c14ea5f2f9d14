// Learning (issue 31) in the canvas against a real `wright serve` (harness.ts) in Chromium:
// the person rates an answer with a thumb and a comment, makes a case from the Learning page,
// starts a round there and reads its candidate's per-case before/after and the learning curve,
// then rolls the accepted item back.
//
// The scripted model follows the conversation: asked to remember the colour, it saves it; asked
// to remember the drink, it saves it only when the request carries a learned item (the
// exemplar the round tries), and otherwise only says it will.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, startFakeModel, startWright, toolResults, type FakeModel, type ModelRequest, type ModelReply, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

function script(request: ModelRequest): ModelReply {
  const said = JSON.stringify(request.messages);
  const first = request.messages.find((message) => message.role === 'user')?.content ?? '';
  if (toolResults(request).length > 0) return { text: 'Saved.' };
  // The learned items are said after the person's message, in the same message: the drink
  // request carries the colour exemplar's words.
  if (first.includes('favourite drink')) {
    return said.includes('## learned') ? { toolCalls: [{ name: 'set_state', arguments: { key: 'favourite_drink', value: 'tea' } }] } : { text: 'I will remember that.' };
  }
  if (first.includes('favourite colour')) return { toolCalls: [{ name: 'set_state', arguments: { key: 'favourite_colour', value: 'green' } }] };
  return { text: 'I will remember that.' };
}

describe.skipIf(!built || !hasChromium || !hasWright)('learning in the canvas', () => {
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
    fake = await startFakeModel(script);
    wright = await startWright(fake, { config: '[agents.default.tools]\nloading = "all"\n' });
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: '+ New conversation' }).waitFor();
  });
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') {
      await page.screenshot({ path: join(import.meta.dirname, '..', 'test-results', 'learning.png') }).catch(() => {});
      console.error(`round: ${JSON.stringify(await call('GET', '/api/agents/default/learning/rounds/1').catch(String))}`);
      console.error(`requests: ${JSON.stringify(fake.requests.slice(-3).map((request) => request.messages.slice(-2)))}`);
      console.error(`wright serve output:\n${wright.log().slice(-3000)}`);
    }
  });
  afterAll(async () => {
    await browser?.close();
    await wright?.stop();
    await fake?.close();
  });

  it('rates an answer, makes a case, runs a round that accepts an item, and rolls it back', async () => {
    await page.getByRole('button', { name: '+ New conversation' }).click();
    const chat = page.getByLabel('Message', { exact: true });
    await chat.fill('Remember that my favourite colour is green');
    await page.keyboard.press('Enter');
    await page.getByText('Saved.').waitFor();

    // The thumbs on the answer: up, then a comment.
    const thumbs = page.getByRole('group', { name: 'Rate this answer' });
    await thumbs.getByRole('button', { name: 'Good answer' }).click();
    await expect.poll(() => thumbs.getByRole('button', { name: 'Good answer' }).getAttribute('aria-pressed')).toBe('true');
    await thumbs.getByLabel('Comment on this answer').fill('exactly right');
    await thumbs.getByRole('button', { name: 'Send' }).click();
    const conversation = new URL(page.url()).pathname.split('/c/')[1];
    await expect
      .poll(async () => {
        const [run] = await call('GET', `/api/conversations/${conversation}/outcomes`);
        return [run?.rating, run?.comment, run?.outcome, run?.source];
      })
      .toEqual(['up', 'exactly right', 'success', 'rating']);

    // A case from that conversation through the API, one from a message on the Learning page.
    await call('POST', '/api/agents/default/cases', { conversation_id: conversation, check: { type: 'state_equals', key: 'favourite_colour', value: 'green' } });
    await page.goto(`${wright.url}/admin/learning/default`);
    const form = page.getByRole('form', { name: 'New case' });
    await form.getByLabel('Case message').fill('Remember that my favourite drink is tea');
    await form.getByLabel('Key').fill('favourite_drink');
    await form.getByLabel('Value (JSON or text)').fill('tea');
    await form.getByRole('button', { name: 'Make the case' }).click();
    const cases = page.getByRole('region', { name: 'Cases' });
    await cases.getByText('Remember that my favourite drink is tea').waitFor();
    await expect.poll(() => cases.getByRole('listitem').count()).toBe(2);

    // A round, followed on the page until it finishes.
    await page.getByRole('button', { name: 'Start a learning round' }).click();
    const curve = page.getByRole('list', { name: 'Learning curve' });
    await curve.getByRole('listitem', { name: 'Round 1: held-out 0% before, 100% after' }).waitFor({ timeout: 20_000 });
    await page.getByRole('region', { name: 'Learning rounds' }).getByRole('button', { name: 'Round 1' }).click();
    const candidate = page.getByRole('region', { name: 'Learning rounds' }).locator('[aria-label^="Candidate"]');
    await candidate.getByText('accepted', { exact: true }).waitFor();
    const row = candidate.getByRole('row', { name: /before and after/ });
    expect(await row.locator('td').allInnerTexts()).toEqual(['Remember that my favourite drink is tea', 'fail', 'pass']);
    // The held-out case is the drink; the colour case is the exemplar's own (training).
    await expect.poll(() => cases.getByText('training', { exact: true }).count()).toBe(1);

    // The live item, with its counters, rolled back from the page.
    const items = page.getByRole('region', { name: 'Learned items' });
    const item = items.locator('[aria-label^="Learned item"]');
    await item.getByText('live', { exact: true }).waitFor();
    await item.getByRole('button', { name: 'Roll back' }).click();
    await item.getByText('rolled_back', { exact: true }).waitFor();
    const [learned] = await call('GET', '/api/agents/default/learning/items');
    expect(learned.status).toBe('rolled_back');
    const changes = await call('GET', `/api/agents/default/learning/items/${learned.id}/changes`);
    expect(changes.map((change: { author: string }) => change.author)).toEqual(['learning', 'learning', 'person']);
  }, 120_000);
});
