// The browser benchmark's workload in Playwright (playwright-core on the same Chromium), for a
// side-by-side with benches/browser.rs. Medians of 20.
//   cd frontend && node ../crates/wright-browser/benches/playwright.mjs
import http from 'node:http';
import fs from 'node:fs';
import { createRequire } from 'node:module';

// Resolved from the working directory, so run it from frontend/ (where playwright-core is installed).
const require = createRequire(process.cwd() + '/');
const { chromium } = require('playwright-core');
const RUNS = 20;
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
const page = '<html><head><title>Bench</title></head><body><h1>Benchmark page</h1><p id="text">Some text to extract from a small local page.</p></body></html>';
const server = http.createServer((req, res) => { res.setHeader('content-type', 'text/html'); res.end(page); });
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${server.address().port}/`;
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const launch = () => chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });

function treeRssKib(root) {
  let total = 0; const stack = [root];
  while (stack.length) {
    const pid = stack.pop();
    try {
      const m = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/\nPss:\s+(\d+)/);
      if (m) total += Number(m[1]);
      stack.push(...fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number));
    } catch { /* process gone */ }
  }
  return total;
}

const launches = [];
for (let i = 0; i < RUNS; i++) {
  const t = performance.now(); const b = await launch(); launches.push(performance.now() - t); await b.close();
}
const browser = await launch();
const browserPid = Number(fs.readFileSync('/proc/' + process.pid + '/task/' + process.pid + '/children', 'utf8').trim().split(/\s+/).pop());
await new Promise((ok) => setTimeout(ok, 500));
const baseRss = treeRssKib(browserPid);
const contexts = []; const pages = [];
for (let i = 0; i < RUNS; i++) {
  const t = performance.now();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const p = await context.newPage(); await p.evaluate('1');
  contexts.push(performance.now() - t); pages.push(p);
}
for (const p of pages) await p.goto(url, { waitUntil: 'load' });
await new Promise((ok) => setTimeout(ok, 500));
const loadedRss = treeRssKib(browserPid);
const trips = [];
for (let i = 0; i < RUNS; i++) {
  const t = performance.now();
  await pages[0].goto(url, { waitUntil: 'load' });
  const text = await pages[0].innerText('#text');
  if (!text.startsWith('Some text')) throw new Error(text);
  trips.push(performance.now() - t);
}
await browser.close(); server.close();
console.log(`playwright-core ${require('playwright-core/package.json').version}, median of ${RUNS}:`);
console.log(`  launch                 ${median(launches).toFixed(1).padStart(8)} ms`);
console.log(`  new context + page     ${median(contexts).toFixed(1).padStart(8)} ms`);
console.log(`  navigate + extract     ${median(trips).toFixed(1).padStart(8)} ms`);
console.log(`  memory per context     ${((loadedRss - baseRss) / RUNS / 1024).toFixed(1).padStart(8)} MiB  (browser tree ${(baseRss / 1024).toFixed(0)} MiB idle, ${(loadedRss / 1024).toFixed(0)} MiB with ${RUNS} contexts)`);
