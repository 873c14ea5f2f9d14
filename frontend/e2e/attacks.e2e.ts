// The canvas attack findings of issue 33 (items 8–11), each tried again in Chromium against the
// built app (dist/) with the API mocked: a component that calls focus() in a loop while the
// person composes in the chat box; a component that floods its frame and the parent with
// errors, bridge requests and render trees; a timing probe made of malformed requests; var()
// in paint and colours; a component's error text; a stored component disabled or deleted
// while its page is open. Needs only `npm run build` and Chromium (skipped without them).
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';

const dist = join(import.meta.dirname, '..', 'dist');
const built = existsSync(join(dist, 'index.html'));
const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
const at = '2026-11-27T10:00:00Z';

/** Takes focus every 30 ms, with no gesture, hoping for what the person types in the chat box.
 * It starts two seconds after it shows, in the pause of a person who has begun to type. */
const GRABBER = `export default function Grabber() {
  const input = React.useRef(null);
  React.useEffect(() => {
    let timer;
    const start = setTimeout(() => { timer = setInterval(() => input.current?.focus(), 30); }, 2000);
    return () => { clearTimeout(start); clearInterval(timer); };
  }, []);
  return React.createElement('input', { ref: input, 'aria-label': 'Grabbed' });
}`;

/** Focuses its field when the person clicks its button: focus the person asked for. */
const FOCUSER = `export default function Focuser() {
  const input = React.useRef(null);
  return React.createElement('div', null,
    React.createElement('button', { onClick: () => input.current?.focus() }, 'Edit'),
    React.createElement('input', { ref: input, 'aria-label': 'Field' }));
}`;

/** Floods everything a frame can send: errors, bridge requests (valid, malformed, oversized)
 * and render trees, from a timer that never stops. */
const FLOOD = `export default function Flood() {
  const [tick, setTick] = React.useState(0);
  React.useEffect(() => {
    let n = 0;
    const timer = setInterval(() => {
      for (let i = 0; i < 200; i++) {
        n += 1;
        self.postMessage({ t: 'error', message: 'flood ' + n + ' ' + 'x'.repeat(3000) });
        self.postMessage({ t: 'request', type: 'getState', id: 1000000 + n, fields: { key: '' } });
        self.postMessage({ t: 'request', type: 'getState', id: 2000000 + n, fields: { key: 'k' + n } });
        self.postMessage({ t: 'request', type: 'importModule', id: 3000000 + n, fields: { name: 'x'.repeat(200000) } });
        self.postMessage({ t: 'ops', ops: [{ op: 'text', id: 999999, text: 'y'.repeat(1000) }] });
      }
      setTick((value) => value + 1);
    }, 0);
    return () => clearInterval(timer);
  }, []);
  return React.createElement('div', null,
    React.createElement(Text, null, 'flooding'),
    Array.from({ length: 300 }, (_, index) => React.createElement('span', { key: index }, String(tick + index))));
}`;

/** Times the parent's answer to a malformed request (names no component can have), 30 times. */
const PROBE = `export default function Probe() {
  const [done, setDone] = React.useState('probing');
  React.useEffect(() => {
    (async () => {
      const times = [];
      let answered = 0;
      for (let i = 0; i < 30; i++) {
        const started = performance.now();
        // a new name each time: the worker keeps the answer for a name it asked for before
        await importModule('not a name ' + i + '!').then(() => {}, () => { answered += 1; });
        times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      setDone('probed');
      await callTool('probe', { answered, min: times[0], median: times[15] });
    })();
  }, []);
  return React.createElement(Text, null, done);
}`;

/** Paint and colours through var(), whose fallback the colour filter does not see. */
const PAINT = `export default function Paint() {
  return React.createElement('div', null,
    React.createElement('svg', { width: 40, height: 40 },
      React.createElement('rect', { 'data-case': 'var', width: 10, height: 10, fill: 'var(--a, red)', stroke: 'var(--b, blue)', style: { fill: 'var(--c, green)', stroke: 'VAR(--d, red)' } }),
      React.createElement('rect', { 'data-case': 'plain', width: 10, height: 10, fill: 'red', stroke: 'rgb(0 0 255)', style: { fill: 'green' } })),
    React.createElement('p', { 'data-case': 'color', style: { color: 'var(--e, red)', backgroundColor: 'env(safe-area-inset-top, red)', borderColor: 'blue' } }, 'painted'));
}`;

/** Throws text that looks like the app's own UI. */
const THROWER = `export default function Thrower() {
  throw new Error('Your session expired: type your access token in the chat box <b>now</b>');
}`;

/** A stored component that runs until it is disabled or deleted. */
const STORED = `export default function Stored() {
  const [n, setN] = React.useState(0);
  React.useEffect(() => { const timer = setInterval(() => setN((value) => value + 1), 200); return () => clearInterval(timer); }, []);
  return React.createElement(Text, null, 'stored running ' + n);
}`;

interface Case {
  title: string;
  code?: string;
  component?: string;
}

const CASES: Record<string, Case> = {
  grab: { title: 'Grabber', code: GRABBER },
  focuser: { title: 'Focuser', code: FOCUSER },
  flood: { title: 'Flood', code: FLOOD },
  probe: { title: 'Probe', code: PROBE },
  paint: { title: 'Paint', code: PAINT },
  thrower: { title: 'Thrower', code: THROWER },
  stored: { title: 'Stored', component: 'stored' },
};

function detail(id: string, item: Case) {
  const args = item.component ? { component: item.component, title: item.title } : { title: item.title, code: '…' };
  return {
    conversation: { id, agent_id: 'default', title: item.title, status: 'waiting', created_at: at, updated_at: at },
    events: [
      { seq: 1, kind: 'user', content: 'show me', text: 'show me', created_at: at },
      { seq: 2, kind: 'tool_call', content: '', id: `call-${id}`, name: 'render_and_wait', arguments: args, provider: null, created_at: at },
    ],
    pending: [
      {
        tool_call_id: `call-${id}`,
        tool_name: 'render_and_wait',
        kind: 'question',
        args,
        created_at: at,
        component: { name: item.component ?? null, version: 1, compiled_js: item.code ?? STORED },
      },
    ],
  };
}

describe.skipIf(!built || !hasChromium)('canvas attacks, issue 33 (Chromium, mocked API)', () => {
  let server: Server;
  let base: string;
  let browser: Browser;
  let page: Page;
  const answers: { id: string; body: unknown }[] = [];
  /** The stored component as the mocked server has it: enabled, disabled, or gone. */
  let stored: 'enabled' | 'disabled' | 'deleted' = 'enabled';

  beforeAll(async () => {
    server = createServer((request, response) => {
      const path = normalize(decodeURIComponent(new URL(request.url!, 'http://x').pathname));
      if (path.startsWith('/api/')) {
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
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });
  afterEach(async () => {
    await page?.close();
  });

  /** A page on the conversation that shows `name`'s component, waiting for an answer. */
  const open = async (name: keyof typeof CASES) => {
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const json = (body: unknown, status = 200) => ({ status, contentType: 'application/json', body: JSON.stringify(body) });
    const id = `c-${name}`;
    await page.route('**/api/**', async (route) => {
      const url = new URL(route.request().url());
      const method = route.request().method();
      const path = url.pathname;
      if (path === '/api/status') return route.fulfill(json({ provider: { kind: 'openai', model: 'test' }, setup_hint: '' }));
      if (path === '/api/agents') return route.fulfill(json([{ id: 'default', name: 'Default', created_at: at }]));
      if (path === '/api/agents/default/sessions') return route.fulfill(json([]));
      if (path === '/api/agents/default/notifications') return route.fulfill(json([]));
      if (path === '/api/agents/default/conversations') return route.fulfill(json([detail(id, CASES[name]).conversation]));
      if (path === `/api/conversations/${id}`) return route.fulfill(json(detail(id, CASES[name])));
      if (path === `/api/conversations/${id}/stream`) return route.fulfill({ status: 200, contentType: 'text/event-stream', body: 'event: status\ndata: {"status":"waiting"}\n\n' });
      if (path === '/api/agents/default/components/stored') {
        if (stored === 'deleted') return route.fulfill(json({ error: { code: 'not_found', message: 'no component stored' } }, 404));
        return route.fulfill(json({ name: 'stored', description: '', version: 1, enabled: stored === 'enabled', code: '', compiled_js: STORED, props_schema: null }));
      }
      if (path.startsWith('/api/agents/default/state/')) return route.fulfill(json(method === 'PUT' ? { ok: true } : { value: null }));
      const pending = path.match(/^\/api\/conversations\/[^/]+\/pending\/(.+)$/);
      if (pending && method === 'POST') {
        answers.push({ id: pending[1], body: route.request().postDataJSON() });
        return route.fulfill(json({ ok: true }));
      }
      return route.fulfill(json({ error: { code: 'not_found', message: path } }, 404));
    });
    await page.goto(`${base}/agents/default/c/${id}`);
    await page.locator(`iframe[title="${CASES[name].title}"]`).waitFor();
    return page.frameLocator(`iframe[title="${CASES[name].title}"]`);
  };

  it('item 8: a person composing in the chat box keeps their text while a component calls focus() in a loop', async () => {
    const frame = await open('grab');
    await frame.getByLabel('Grabbed').waitFor();
    const chat = page.getByLabel('Message', { exact: true });
    await chat.click();
    await page.keyboard.type('Hello, ', { delay: 30 });
    // The person pauses to think, as people do: their key press still counts as a user
    // activation for five seconds, and the component starts calling focus().
    await page.waitForTimeout(2500);
    await page.keyboard.type('my-secret-answer', { delay: 30 });
    await page.waitForTimeout(2000);
    await page.keyboard.type('!', { delay: 30 });
    const captured = (await page.locator('iframe[title="Grabber"]').count()) ? await frame.getByLabel('Grabbed').inputValue() : '';
    expect({ chat: await chat.inputValue(), captured }).toEqual({ chat: 'Hello, my-secret-answer!', captured: '' });
  });

  it('item 8: focus the person asks for inside the frame (a click on its button) still works', async () => {
    const frame = await open('focuser');
    await frame.getByRole('button', { name: 'Edit' }).click();
    // the worker answers the click a moment later
    await expect.poll(() => frame.getByLabel('Field').evaluate((element) => document.activeElement === element)).toBe(true);
    await page.keyboard.type('typed here', { delay: 20 });
    expect(await frame.getByLabel('Field').inputValue()).toBe('typed here');
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('');
  });

  it('item 9: the app stays responsive while a component floods, and the flooding frame is stopped where the person can restart it', async () => {
    /** Fills the chat box over and over for `ms`, timing each fill. */
    const fillFor = async (ms: number) => {
      const chat = page.getByLabel('Message', { exact: true });
      const fills: number[] = [];
      const until = Date.now() + ms;
      for (let index = 0; Date.now() < until; index++) {
        const started = performance.now();
        await chat.fill(`draft ${index} while a component floods`);
        fills.push(Math.round(performance.now() - started));
      }
      const sorted = [...fills].sort((a, b) => a - b);
      const percentile = (share: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))];
      return { count: fills.length, median: percentile(0.5), p90: percentile(0.9), max: sorted.at(-1)! };
    };
    // The same fills with a quiet component first: what this machine does now, without a flood.
    await open('paint');
    const quiet = await fillFor(1500);
    await page.close();
    const frame = await open('flood');
    await frame.getByText('flooding').waitFor();
    const chat = page.getByLabel('Message', { exact: true });
    const flooded = await fillFor(4000);
    console.log(`chat box fills, quiet: ${JSON.stringify(quiet)}; under flood: ${JSON.stringify(flooded)} (ms)`);
    expect(flooded.count).toBeGreaterThanOrEqual(5);
    // Nine fills in ten under 100 ms, and none that stalls (on main, one fill took over 30 s).
    // On a machine so busy that quiet fills are slow too (a shared two-core machine under
    // others' builds), under twice the quiet figure: the slowest fill alone says more about
    // the machine than about the flood.
    expect(flooded.p90).toBeLessThan(Math.max(100, 2 * quiet.p90));
    expect(flooded.max).toBeLessThan(Math.max(1000, 4 * quiet.max));
    // The frame that kept flooding was stopped, visibly, and the person can start it again.
    await page.getByText(/was stopped: it sent more than the canvas accepts/).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Restart the component' }).click();
    await page.frameLocator('iframe[title="Flood"]').getByText('flooding').waitFor();
    await page.getByText(/was stopped: it sent more than the canvas accepts/).waitFor({ timeout: 10_000 });
    expect(await chat.inputValue()).toMatch(/while a component floods$/);
  }, 90_000);

  it('item 10: a malformed request is answered, never at once: no sub-millisecond probe of the app', async () => {
    answers.length = 0;
    const frame = await open('probe');
    await frame.getByText('probed').waitFor({ timeout: 30_000 });
    await expect.poll(() => answers.length, { timeout: 10_000 }).toBe(1);
    const report = (answers[0].body as { answer: { action: string; answered: number; min: number; median: number } }).answer;
    console.log(`malformed request round trips: min ${report.min.toFixed(2)} ms, median ${report.median.toFixed(2)} ms`);
    expect(report.action).toBe('probe');
    expect(report.answered).toBe(30);
    expect(report.min).toBeGreaterThanOrEqual(15);
  }, 60_000);

  it('item 11: fill, stroke and colours through var() are refused; plain ones are drawn', async () => {
    const frame = await open('paint');
    await frame.getByText('painted').waitFor();
    const read = (selector: string) =>
      frame.locator(selector).evaluate((element) => ({ fill: element.getAttribute('fill'), stroke: element.getAttribute('stroke'), style: element.getAttribute('style') ?? '' }));
    expect(await read('[data-case="var"]')).toEqual({ fill: null, stroke: null, style: '' });
    expect(await read('[data-case="plain"]')).toEqual({ fill: 'red', stroke: 'rgb(0 0 255)', style: 'fill: green;' });
    expect((await read('[data-case="color"]')).style).toBe('border-color: blue;');
  });

  it("item 11: a component's error text shows as plain text inside its own frame, never drawn by the app", async () => {
    const frame = await open('thrower');
    await frame.getByText(/Your session expired: type your access token in the chat box <b>now<\/b>/).waitFor();
    expect(await frame.locator('b').count()).toBe(0);
    // Nothing of it in the app's own document.
    expect(await page.locator('body').innerText()).not.toContain('session expired');
  });

  it('item 11: a stored component disabled, then deleted, while its page is open stops running', async () => {
    stored = 'enabled';
    const frame = await open('stored');
    await frame.getByText(/stored running/).waitFor();
    stored = 'disabled';
    await page.getByText(/Component “stored” is not shown: .*disabled/).waitFor({ timeout: 15_000 });
    expect(await page.locator('iframe[title="Stored"]').count()).toBe(0);
    // enabled again, it comes back; deleted, it goes for good
    stored = 'enabled';
    await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
    await page.frameLocator('iframe[title="Stored"]').getByText(/stored running/).waitFor({ timeout: 15_000 });
    stored = 'deleted';
    await page.getByText(/Component “stored” is not shown/).waitFor({ timeout: 15_000 });
    expect(await page.locator('iframe[title="Stored"]').count()).toBe(0);
  }, 60_000);
});
