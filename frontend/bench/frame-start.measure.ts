// Figures, never asserted: how long a component frame takes from its iframe being created to
// the component drawn (the frame's first resize to the component's height), in Chromium run
// without any automation attached — DevTools (Playwright's CDP) pauses every new worker until
// it has attached, which would count against a runtime that starts one. The page creates the
// frames itself, one after another, with the app's frame document (src/frame/srcdoc.ts), and
// posts its timings back to this server.
//
//   npm run build:frame && npx vitest run --config vitest.measure.config.ts bench/frame-start.measure.ts
//
// FRAME_RUNTIMES="label=path/to/frame-runtime.js,…" compares runtimes (e.g. another branch's
// build) in the same browser, alternating frame by frame; default: this build's.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { CHROMIUM } from '../e2e/browser';
import { frameDocument } from '../src/frame/srcdoc';

const RUNS = Number(process.env.RUNS ?? 30);
const runtimes = (process.env.FRAME_RUNTIMES ?? `this build=${join(import.meta.dirname, '..', 'build', 'frame', 'frame-runtime.js')}`).split(',').map((entry) => {
  const [label, path] = entry.split('=');
  return { label, runtime: readFileSync(path, 'utf8') };
});

const COMPONENT = `export default function Tapper() {
  const [n, setN] = useState(0);
  return React.createElement(Card, { title: 'Taps' }, React.createElement(Row, null,
    React.createElement(Button, { onClick: () => setN(n + 1) }, 'Tap me'), React.createElement(Text, null, 'taps: ' + n)));
}`;

const page = (documents: string[]) => `<!doctype html><meta charset="utf-8"><body><script>
const documents = ${JSON.stringify(documents).replace(/</g, '\\u003c')};
const runs = ${RUNS};
const times = documents.map(() => []);
const PROTOCOL = 'wright-frame/1';
function once(index) {
  return new Promise((done) => {
    const nonce = 'b'.repeat(32);
    const frame = document.createElement('iframe');
    frame.sandbox = 'allow-scripts';
    const started = performance.now();
    const onMessage = (event) => {
      if (event.source !== frame.contentWindow || event.data?.nonce !== nonce) return;
      if (event.data.type === 'ready') frame.contentWindow.postMessage({ protocol: PROTOCOL, nonce, type: 'init', code: ${JSON.stringify(COMPONENT)}, props: {}, interactive: true, theme: 'light' }, '*');
      if (event.data.type === 'resize' && event.data.height > 40) {
        times[index].push(performance.now() - started);
        removeEventListener('message', onMessage);
        frame.remove();
        done();
      }
    };
    addEventListener('message', onMessage);
    frame.srcdoc = documents[index];
    document.body.append(frame);
  });
}
(async () => {
  for (let run = 0; run < runs; run++) for (let index = 0; index < documents.length; index++) await once(index);
  await fetch('/done', { method: 'POST', body: JSON.stringify(times) });
})();
</script>`;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

it('measures a component frame’s start', async () => {
  const documents = runtimes.map(({ runtime }) => frameDocument({ runtime, cspNonce: 'c'.repeat(32), bridgeNonce: 'b'.repeat(32) }));
  let finish: (times: number[][]) => void = () => {};
  const finished = new Promise<number[][]>((done) => (finish = done));
  const server = createServer((request, response) => {
    if (request.method === 'POST') {
      let body = '';
      request.on('data', (part) => (body += part));
      request.on('end', () => {
        response.end('ok');
        finish(JSON.parse(body));
      });
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html' }).end(page(documents));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const profile = mkdtempSync(join(tmpdir(), 'wright-frame-start-'));
  const browser = spawn(
    CHROMIUM,
    ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', `--user-data-dir=${profile}`, `http://127.0.0.1:${(server.address() as AddressInfo).port}/`],
    // its own process group: /usr/bin/chromium is a script that does not always exec the browser
    { stdio: 'ignore', detached: true },
  );
  try {
    const times = await finished;
    runtimes.forEach(({ label, runtime }, index) => {
      const sorted = [...times[index]].sort((a, b) => a - b);
      console.log(`${label} (${(runtime.length / 1024).toFixed(0)} kB): iframe created → component drawn: median ${median(sorted).toFixed(1)} ms (${sorted[0].toFixed(0)}–${sorted.at(-1)!.toFixed(0)}) of ${sorted.length}`);
    });
  } finally {
    const exited = new Promise((done) => browser.once('exit', done));
    process.kill(-browser.pid!);
    await Promise.race([exited, new Promise((done) => setTimeout(done, 5000))]);
    server.close();
    rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
});
