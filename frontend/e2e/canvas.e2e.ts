// The built app (dist/) in Chromium with the API mocked: a conversation waiting on a
// render_and_wait component and a render_blocks form. Checks the component frame for real:
// it renders, its sandbox stops it reading the parent or the network, useAgentState goes
// through the bridge, callTool answers the pending call once; and the form's answer.
// Needs only `npm run build` and Chromium (skipped without them).
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationDetail } from '../src/api/client';
import { hasChromium, launch } from './browser';

const dist = join(import.meta.dirname, '..', 'dist');
const built = existsSync(join(dist, 'index.html'));
const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

const at = '2026-11-22T10:00:00Z';
const COMPONENT = `import React, { useState, useEffect } from "react";
export default function Counter({ start }) {
  const [n, setN] = useState(start);
  const [saved, setSaved] = useAgentState("clicks", 0);
  const [net, setNet] = useState("pending");
  let parentAccess = "open";
  try { parentAccess = String(window.parent.document.cookie); } catch (e) { parentAccess = "blocked"; }
  useEffect(() => { fetch("/api/agents").then(() => setNet("open"), () => setNet("blocked")); }, []);
  return React.createElement(Card, { title: "Counter" },
    React.createElement(Text, null, "n=" + n + " saved=" + saved + " parent=" + parentAccess + " net=" + net),
    React.createElement(Button, { variant: "primary", onClick: () => { setN(n + 1); setSaved(saved + 1); } }, "Add"),
    React.createElement(Button, { onClick: () => callTool("done", { n }).then(() => setN(-1), (e) => setNet("refused: " + e.message)) }, "Done"));
}`;

const detail = {
  conversation: { id: 'c1', agent_id: 'default', title: 'Canvas test', status: 'waiting', created_at: at, updated_at: at },
  events: [
    { seq: 1, kind: 'user', content: 'show me', text: 'show me', created_at: at },
    { seq: 2, kind: 'tool_call', content: '', id: 'call-c', name: 'render_and_wait', arguments: { component: 'counter', props: { start: 5 }, title: 'A counter' }, provider: null, created_at: at },
    { seq: 3, kind: 'tool_call', content: '', id: 'call-f', name: 'render_blocks', arguments: { title: 'Details', blocks: [{ type: 'form', submitLabel: 'Save', fields: [{ name: 'city', label: 'City', type: 'text', required: true }, { name: 'days', label: 'Days', type: 'number', default: 2 }] }] }, provider: null, created_at: at },
  ],
  pending: [
    { tool_call_id: 'call-c', tool_name: 'render_and_wait', kind: 'question', args: { component: 'counter', props: { start: 5 }, title: 'A counter' }, created_at: at, component: { name: 'counter', version: 1, compiled_js: COMPONENT } },
    { tool_call_id: 'call-f', tool_name: 'render_blocks', kind: 'question', args: {}, created_at: at },
  ],
} satisfies ConversationDetail;

describe.skipIf(!built || !hasChromium)('canvas in Chromium (mocked API)', () => {
  let server: Server;
  let base: string;
  let browser: Browser;
  let page: Page;
  const answers: { id: string; body: unknown }[] = [];
  const stateWrites: unknown[] = [];
  const leaks: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      const path = normalize(decodeURIComponent(new URL(request.url!, 'http://x').pathname));
      if (path.startsWith('/api/')) {
        leaks.push(path); // only a request that escaped the mocks (the page's routes) lands here
        response.writeHead(404).end('{}');
        return;
      }
      const file = join(dist, path);
      const target = file.startsWith(dist) && existsSync(file) && extname(file) ? file : join(dist, 'index.html');
      response.writeHead(200, { 'Content-Type': types[extname(target)] ?? 'application/octet-stream' }).end(readFileSync(target));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const json = (body: unknown, status = 200) => ({ status, contentType: 'application/json', body: JSON.stringify(body) });
    await page.route('**/api/**', async (route) => {
      const url = new URL(route.request().url());
      const method = route.request().method();
      const path = url.pathname;
      if (path === '/api/status') return route.fulfill(json({ provider: { kind: 'openai', model: 'test' }, setup_hint: '' }));
      if (path === '/api/agents') return route.fulfill(json([{ id: 'default', name: 'Default', created_at: at }]));
      if (path === '/api/agents/default/conversations') return route.fulfill(json([detail.conversation]));
      if (path === '/api/conversations/c1') return route.fulfill(json(detail));
      // a stored component runs as the server has it now, fetched when it is shown
      if (path === '/api/agents/default/components/counter') return route.fulfill(json({ name: 'counter', description: '', version: 1, enabled: true, code: '', compiled_js: COMPONENT, props_schema: null }));
      if (path === '/api/conversations/c1/stream') return route.fulfill({ status: 200, contentType: 'text/event-stream', body: 'event: status\ndata: {"status":"waiting"}\n\n' });
      if (path === '/api/agents/default/state/clicks') {
        if (method === 'PUT') {
          stateWrites.push(route.request().postDataJSON());
          return route.fulfill(json({ ok: true }));
        }
        return route.fulfill(json({ value: 10 }));
      }
      const pending = path.match(/^\/api\/conversations\/c1\/pending\/(.+)$/);
      if (pending && method === 'POST') {
        answers.push({ id: pending[1], body: route.request().postDataJSON() });
        return route.fulfill(json({ ok: true }));
      }
      return route.fulfill(json({ error: { code: 'not_found', message: path } }, 404));
    });
    await page.goto(`${base}/agents/default/c/c1`);
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('renders the component in an opaque-origin sandbox with no network', async () => {
    const iframe = page.locator('iframe[title="A counter"]');
    await iframe.waitFor();
    expect(await iframe.getAttribute('sandbox')).toBe('allow-scripts');
    const frame = page.frameLocator('iframe[title="A counter"]');
    // state came through the bridge (10), the parent is unreachable, fetch is refused by the CSP
    await frame.getByText('n=5 saved=10 parent=blocked net=blocked').waitFor({ timeout: 10_000 });
    await frame.getByRole('button', { name: 'Add' }).click();
    await frame.getByText('n=6 saved=11').waitFor();
    await expect.poll(() => stateWrites).toEqual([11]);
  });

  it('answers the pending call once with {action, ...payload}', async () => {
    const frame = page.frameLocator('iframe[title="A counter"]');
    await frame.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => answers.filter((answer) => answer.id === 'call-c')).toEqual([{ id: 'call-c', body: { answer: { action: 'done', n: 6 } } }]);
    // it stays on the canvas, read-only, marked as answered; a second callTool is refused
    await page.getByText('Answered: done').waitFor();
    await frame.getByText(/^n=-1/).waitFor();
  });

  it('submits the form block as {action: "submit", data}', async () => {
    await page.getByLabel(/City/).fill('Lisbon');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => answers.filter((answer) => answer.id === 'call-f')).toEqual([{ id: 'call-f', body: { answer: { action: 'submit', data: { city: 'Lisbon', days: 2 } } } }]);
    await page.getByText('Submitted').waitFor();
    await page.screenshot({ path: join(import.meta.dirname, '..', 'test-results', 'canvas.png') });
    expect(leaks).toEqual([]);
  });
});
