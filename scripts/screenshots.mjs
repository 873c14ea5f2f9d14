// Regenerates docs/canvas-*.png and docs/admin-history.png: `cargo build --bin wright && (cd frontend && npm run build) && node scripts/screenshots.mjs`.
// README screenshots: a fake OpenAI-compatible model that renders blocks, then a component.
import http from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
const root = join(fileURLToPath(import.meta.url), '..', '..');
const { chromium } = createRequire(join(root, 'frontend', 'package.json'))('playwright-core');

const turns = [
  { name: 'render_blocks', arguments: { title: 'Your spending this week', blocks: [
    { type: 'markdown', content: '**Groceries** are up 12% on last week. Here is the breakdown:' },
    { type: 'table', columns: [{ key: 'day', label: 'Day' }, { key: 'amount', label: 'Amount (€)' }], data: [{ day: 'Mon', amount: 23.5 }, { day: 'Wed', amount: 41.2 }, { day: 'Sat', amount: 67.9 }] },
    { type: 'chart', chartType: 'bar', data: { labels: ['Mon', 'Wed', 'Sat'], datasets: [{ label: '€', data: [23.5, 41.2, 67.9] }] } },
    { type: 'alert', variant: 'info', content: 'Saturday was the big shop.' },
    { type: 'form', submitLabel: 'Set budget', fields: [{ name: 'budget', label: 'Weekly budget (€)', type: 'number', required: true, default: 120 }, { name: 'remind', label: 'Remind me on Fridays', type: 'checkbox', default: true }] },
  ] } },
  { name: 'render_and_wait', arguments: { title: 'Pick a colour', props: { colours: ['teal', 'amber', 'violet'] }, code: `import { useState } from 'react';
export default function Picker({ colours }) {
  const [chosen, setChosen] = useState(colours[0]);
  return <Card><Stack><Heading>Which theme colour?</Heading>
    <Row>{colours.map(c => <Button key={c} onClick={() => setChosen(c)}>{c}</Button>)}</Row>
    <Text>Chosen: <b style={{color: chosen}}>{chosen}</b></Text>
    <Button onClick={() => callTool('choose', { colour: chosen })}>Use it</Button></Stack></Card>;
}` } },
];
let turn = 0;
const fake = http.createServer((req, res) => {
  let body = ''; req.on('data', d => body += d); req.on('end', () => {
    // Only chat requests take a turn: Wright also asks the server for its context window.
    if (!req.url.endsWith('/chat/completions')) { res.writeHead(404); res.end(); return; }
    const call = turns[turn++];
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta, finish) => res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', model: 'fake', choices: [{ index: 0, delta, finish_reason: finish ?? null }] })}\n\n`);
    if (call) {
      chunk({ role: 'assistant', tool_calls: [{ index: 0, id: `call_${turn}`, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.arguments) } }] });
      chunk({}, 'tool_calls');
    } else { chunk({ role: 'assistant', content: 'Done.' }); chunk({}, 'stop'); }
    res.end('data: [DONE]\n\n');
  });
});
await new Promise(r => fake.listen(0, '127.0.0.1', r));
const dataDir = mkdtempSync(join(tmpdir(), 'wright-shots-'));
const server = spawn(join(root, 'target', 'debug', 'wright'), ['--data-dir', dataDir, 'serve', '--bind', '127.0.0.1:0'], {
  cwd: root, env: { PATH: process.env.PATH, WRIGHT_TOKEN: 'shots', OPENAI_BASE_URL: `http://127.0.0.1:${fake.address().port}/v1`, WRIGHT_MODEL: 'openai-compatible/fake' } });
const url = await new Promise(resolve => { let out = ''; server.stdout.on('data', d => { out += d; const m = out.match(/listening on (http:\/\/\S+)/); if (m) resolve(m[1]); }); });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
await page.goto(url);
await page.fill('#token', 'shots');
await page.keyboard.press('Enter');
// The session cookie is set when the app shows the agent; API calls before that get 401.
await page.getByRole('button', { name: '+ New conversation' }).waitFor();
const api = (path, body) => page.evaluate(async ([path, body]) => (await fetch(path, { method: body ? 'POST' : 'GET', headers: { 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined })).json(), [path, body]);
const conversation = await api('/api/agents/default/conversations', { title: 'Weekly spending' });
await api(`/api/conversations/${conversation.id}/messages`, { text: 'How much did I spend on groceries this week?' });
await page.waitForTimeout(1500);
await page.goto(`${url}/agents/default/c/${conversation.id}`);
await page.waitForTimeout(2500);
await page.screenshot({ path: join(root, 'docs', 'canvas-blocks.png') });
const detail = await api(`/api/conversations/${conversation.id}`);
const pending = detail.pending[0];
await api(`/api/conversations/${conversation.id}/pending/${pending.tool_call_id}`, { answer: { action: 'submit', data: { budget: 120, remind: true } } });
await page.waitForTimeout(2000);
await page.reload();
await page.waitForTimeout(3000);
await page.screenshot({ path: join(root, 'docs', 'canvas-component.png') });
// The admin page: the system prompt's history after two edits, with the diff of the last one.
const prompt = (await api('/api/agents/default/documents/system_prompt')).content;
await api('/api/agents/default/documents/system_prompt', { operation: 'append', content: 'Answer money questions in euros, with one decimal.', reason: 'the user asked for euros' });
await api('/api/agents/default/documents/system_prompt', { operation: 'find_replace', find: 'one decimal', replace: 'two decimals', reason: 'cents matter for the budget' });
await page.goto(`${url}/admin/prompt/default`);
await page.waitForTimeout(2000);
await page.screenshot({ path: join(root, 'docs', 'admin-history.png') });
console.log(JSON.stringify({ url, conversation: conversation.id, pending: pending.tool_name, promptChars: prompt.length }));
await browser.close(); server.kill(); fake.close();
