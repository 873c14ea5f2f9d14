// Figures for the canvas (issue 7), printed, never asserted: the built app's bundle size, the
// first load of the app (first contentful paint of the login screen, fresh browser context
// each time), and the time from the model's reply that parks a render_blocks call to the
// form showing in an open conversation, and the same for a component (render_and_wait) and
// the time a click in it takes to show — through a real `wright serve` (the binary cargo
// built, debug unless WRIGHT_BIN says otherwise) and the scripted model of e2e/harness.ts.
//
//   (cd frontend && npm run build) && cargo build --bin wright && cd frontend && npm run measure
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { it } from 'vitest';
import { launch } from '../e2e/browser';
import { scenarioOf, startFakeModel, startWright, toolResults } from '../e2e/harness';

const RUNS = Number(process.env.RUNS ?? 15);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const range = (values: number[]) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;

it('measures the canvas', async () => {
  const assets = join(import.meta.dirname, '..', 'dist', 'assets');
  for (const file of readdirSync(assets)) {
    const bytes = readFileSync(join(assets, file));
    console.log(`bundle ${file}: ${(statSync(join(assets, file)).size / 1024).toFixed(0)} kB, ${(gzipSync(bytes).length / 1024).toFixed(0)} kB gzip`);
  }

  const form = { title: 'Budget', blocks: [{ type: 'form', submitLabel: 'Save', fields: [{ name: 'budget', label: 'Budget', type: 'number' }] }] };
  const component = {
    title: 'Tapper',
    code: `export default function Tapper() {
  const [n, setN] = useState(0);
  return <Card title="Taps"><Row><Button onClick={() => setN(n + 1)}>Tap me</Button><Text>taps: {n}</Text></Row></Card>;
}`,
  };
  const fake = await startFakeModel((request) =>
    toolResults(request).length
      ? { text: 'ok' }
      : scenarioOf(request) === 'form'
        ? { toolCalls: [{ name: 'render_blocks', arguments: form }] }
        : scenarioOf(request) === 'component'
          ? { toolCalls: [{ name: 'render_and_wait', arguments: component }] }
          : { text: 'hi' },
  );
  const wright = await startWright(fake);
  const browser = await launch();
  try {
    const paints: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(wright.url);
      await page.locator('#token').waitFor();
      paints.push(await page.evaluate(() => new Promise<number>((done) => new PerformanceObserver((list) => done(list.getEntries()[0].startTime)).observe({ type: 'paint', buffered: true }))));
      await context.close();
    }
    console.log(`first contentful paint of the login screen: median ${median(paints).toFixed(0)} ms (${range(paints)}) of ${RUNS}`);

    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: '+ New conversation' }).waitFor();
    const latencies: number[] = [];
    const fromStored: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const previous = page.url();
      await page.getByRole('button', { name: '+ New conversation' }).click();
      await page.waitForURL((url) => /\/c\/[^/]+$/.test(url.pathname) && url.href !== previous);
      // the page notes when the form appears; the model notes when its reply ended
      await page.evaluate(() => {
        const w = window as unknown as { formShownAt?: number };
        delete w.formShownAt;
        const observer = new MutationObserver(() => {
          if (document.querySelector('.canvas input[type="number"]')) {
            w.formShownAt = Date.now();
            observer.disconnect();
          }
        });
        observer.observe(document.body, { subtree: true, childList: true });
      });
      const index = fake.requests.length;
      await page.getByLabel('Message').fill('scenario:form');
      await page.getByLabel('Message').press('Enter');
      await page.waitForFunction(() => (window as unknown as { formShownAt?: number }).formShownAt);
      const shownAt = await page.evaluate(() => (window as unknown as { formShownAt: number }).formShownAt);
      latencies.push(shownAt - fake.repliedAt[index]);
      // The pending call's row is stamped by SQLite when stored (same clock, ms precision).
      const conversation = page.url().split('/c/')[1];
      const storedAt = await page.evaluate(async (id) => {
        const detail = (await (await fetch(`/api/conversations/${id}`)).json()) as { pending: { created_at: string }[] };
        return Date.parse(detail.pending[0].created_at);
      }, conversation);
      fromStored.push(shownAt - storedAt);
    }
    console.log(`model's render_blocks reply ended → form shown in the canvas: median ${median(latencies).toFixed(0)} ms (${range(latencies)}) of ${RUNS}`);
    console.log(`pending call stored → form shown in the canvas: median ${median(fromStored).toFixed(0)} ms (${range(fromStored)}) of ${RUNS}`);

    // A component: the frame starts (since issue 23 a worker in it runs the code and the frame
    // draws its tree), and a click goes to the component and back.
    const shown: number[] = [];
    const clicked: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const previous = page.url();
      await page.getByRole('button', { name: '+ New conversation' }).click();
      await page.waitForURL((url) => /\/c\/[^/]+$/.test(url.pathname) && url.href !== previous);
      const index = fake.requests.length;
      await page.getByLabel('Message').fill('scenario:component');
      await page.getByLabel('Message').press('Enter');
      const frame = (await (await page.waitForSelector('iframe[title="Tapper"]')).contentFrame())!;
      const seen = (text: string) => frame.waitForFunction((wanted) => document.body.textContent?.includes(wanted) && Date.now(), text, { polling: 2 }).then((handle) => handle.jsonValue() as Promise<number>);
      shown.push((await seen('taps: 0')) - fake.repliedAt[index]);
      const before = Date.now();
      await frame.getByRole('button', { name: 'Tap me' }).click();
      clicked.push((await seen('taps: 1')) - before);
    }
    console.log(`model's render_and_wait reply ended → component shown in its frame: median ${median(shown).toFixed(0)} ms (${range(shown)}) of ${RUNS}`);
    console.log(`click in a component → its new state shown: median ${median(clicked).toFixed(0)} ms (${range(clicked)}) of ${RUNS}`);
  } finally {
    await browser.close();
    await wright.stop();
    await fake.close();
  }
});
