// A real `wright serve` for the browser tests, and a scripted model it talks to.
//
// The model is a local HTTP server speaking the OpenAI Chat Completions streaming wire (the
// same bytes a real provider sends: `data:` chunks with tool_calls deltas, a finish reason,
// `[DONE]`). It is scripted by a function of the request it receives, so a script can answer
// from what the conversation holds (the first user message names a scenario, tool results
// show how far it got) and keeps working across a restart of `wright serve`.
//
// `startWright` spawns the binary built by cargo (WRIGHT_BIN, or target/debug/wright under
// CARGO_TARGET_DIR or the repository) on a fresh data directory; it serves the canvas built
// into it when it was compiled, so build the binary again after `npm run build`; `restart` stops it (SIGKILL:
// a crash, not a polite shutdown) and starts it again on the same port and data.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');
export const WRIGHT_BIN = process.env.WRIGHT_BIN ?? join(process.env.CARGO_TARGET_DIR ? resolve(root, process.env.CARGO_TARGET_DIR) : join(root, 'target'), 'debug', 'wright');
export const hasWright = existsSync(WRIGHT_BIN);

/** One chat message as the model receives it (OpenAI wire). */
export interface WireMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ModelRequest {
  model: string;
  /** Sent only when a profile or a setting chooses one. */
  temperature?: number;
  messages: WireMessage[];
  tools?: { function: { name: string } }[];
}

export type ModelReply = { text: string } | { toolCalls: { name: string; arguments: unknown }[] };

/** A request the fake model refused, with the status and body it answered. */
export interface Refusal {
  status: number;
  body: unknown;
  request: ModelRequest;
}

export interface FakeModel {
  baseUrl: string;
  requests: ModelRequest[];
  /** Every request answered with an error (a history OpenAI would refuse, or a script that threw). */
  refused: Refusal[];
  /** When each reply's last byte was written (Date.now()), in the order of `requests`. */
  repliedAt: number[];
  close(): Promise<void>;
}

/** OpenAI's error envelope for a request it refuses as invalid. */
function invalidRequest(message: string, param: string | null = 'messages') {
  return { error: { message, type: 'invalid_request_error', param, code: null } };
}

/**
 * Checks a Chat Completions history the way OpenAI does: an assistant message with
 * `tool_calls` must be followed, right after it, by one `tool` message per call id; a `tool`
 * message must answer a call of the assistant message that precedes its run of tool messages.
 * Returns OpenAI's error body for the first violation, or null for a valid history.
 */
export function validateHistory(messages: WireMessage[]): ReturnType<typeof invalidRequest> | null {
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index];
    if (message.role === 'tool') {
      return invalidRequest("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", 'messages.[' + index + '].role');
    }
    if (message.role !== 'assistant' || !message.tool_calls?.length) continue;
    const unanswered = message.tool_calls.map((call) => call.id);
    while (index + 1 < messages.length && messages[index + 1].role === 'tool') {
      index += 1;
      const at = unanswered.indexOf(messages[index].tool_call_id ?? '');
      if (at < 0) {
        return invalidRequest("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", 'messages.[' + index + '].role');
      }
      unanswered.splice(at, 1);
    }
    if (unanswered.length) {
      return invalidRequest(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " +
          unanswered.join(', '),
      );
    }
  }
  return null;
}

/** The key the fake's model list accepts, as OpenAI's `GET /v1/models` needs one. */
export const FAKE_MODEL_KEY = 'sk-e2e';

/** `models`: what `GET /v1/models` lists (OpenAI's shape), for connections added in the canvas. */
export async function startFakeModel(script: (request: ModelRequest) => ModelReply, options: { models?: string[] } = {}): Promise<FakeModel> {
  const requests: ModelRequest[] = [];
  const refused: Refusal[] = [];
  const repliedAt: number[] = [];
  let calls = 0;
  const server: Server = createServer(async (request, response) => {
    if (request.method === 'GET' && request.url?.endsWith('/v1/models')) {
      if (request.headers.authorization !== `Bearer ${FAKE_MODEL_KEY}`) {
        response
          .writeHead(401, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }));
        return;
      }
      const data = (options.models ?? ['e2e-model']).map((id) => ({ id, object: 'model', created: 1715367049, owned_by: 'system' }));
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data }));
      return;
    }
    if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const body = JSON.parse(await readBody(request)) as ModelRequest;
    requests.push(body);
    const refuse = (error: unknown) => {
      refused.push({ status: 400, body: error, request: body });
      repliedAt[requests.indexOf(body)] = Date.now();
      response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(error));
    };
    const invalid = validateHistory(body.messages ?? []);
    if (invalid) return refuse(invalid);
    let reply: ModelReply;
    try {
      reply = script(body);
    } catch (error) {
      return refuse(invalidRequest(String(error), null));
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: unknown, finish: string | null = null) =>
      response.write(`data: ${JSON.stringify({ id: `chatcmpl-${calls}`, object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    calls += 1;
    if ('text' in reply) {
      chunk({ role: 'assistant', content: '' });
      // split so the app really streams
      for (const part of reply.text.match(/[\s\S]{1,12}/g) ?? []) chunk({ content: part });
      chunk({}, 'stop');
    } else {
      reply.toolCalls.forEach((call, index) => {
        const args = JSON.stringify(call.arguments);
        chunk({ role: 'assistant', tool_calls: [{ index, id: `call_${calls}_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] });
        for (const part of args.match(/[\s\S]{1,64}/g) ?? []) chunk({ tool_calls: [{ index, function: { arguments: part } }] });
      });
      chunk({}, 'tool_calls');
    }
    response.end('data: [DONE]\n\n', () => (repliedAt[requests.indexOf(body)] = Date.now()));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    refused,
    repliedAt,
    close: () => new Promise((done) => server.close(() => done())),
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((done, fail) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (part: string) => (body += part));
    request.on('end', () => done(body));
    request.on('error', fail);
  });
}

export interface Wright {
  url: string;
  token: string;
  dataDir: string;
  /** Kill the process (SIGKILL) and start it again on the same port and data directory. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  /** Everything the server printed, for a failing test's message. */
  log(): string;
}

/**
 * `config`: the text of the data directory's `config.toml` (e.g. an egress allowlist).
 * `noModel`: start without the provider variables, as a fresh install is (the model is then
 * connected from the Settings page).
 */
export async function startWright(model: FakeModel, options: { config?: string; noModel?: boolean; env?: Record<string, string> } = {}): Promise<Wright> {
  const dataDir = mkdtempSync(join(tmpdir(), 'wright-e2e-'));
  if (options.config !== undefined) writeFileSync(join(dataDir, 'config.toml'), options.config);
  const token = `e2e-${Math.random().toString(36).slice(2)}`;
  let output = '';
  let child: ChildProcess | null = null;
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? dataDir,
    WRIGHT_TOKEN: token,
    ...(options.noModel ? {} : { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: FAKE_MODEL_KEY, WRIGHT_MODEL: 'openai/e2e-model' }),
    // With `noModel` the server looks for a local Ollama on its default address; a model
    // picked in the canvas wins over it either way.
    RUST_LOG: process.env.RUST_LOG ?? 'warn',
    // E.g. WRIGHT_TEST_CLOCK_FILE: the (debug) binary's clock, moved by the test.
    ...options.env,
  };
  const launch = (bind: string) =>
    new Promise<string>((done, fail) => {
      const process_ = spawn(WRIGHT_BIN, ['--data-dir', dataDir, 'serve', '--bind', bind], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      child = process_;
      const timer = setTimeout(() => fail(new Error(`wright serve did not start in 30 s:\n${output}`)), 30_000);
      const watch = (data: Buffer) => {
        output += data.toString();
        const found = output.match(/listening on (http:\/\/[0-9.:]+)/g);
        if (found) {
          clearTimeout(timer);
          done(found[found.length - 1].replace('listening on ', ''));
        }
      };
      process_.stdout!.on('data', watch);
      process_.stderr!.on('data', watch);
      process_.on('exit', (code, signal) => {
        output += `\n[wright exited: ${code ?? signal}]\n`;
        clearTimeout(timer);
        fail(new Error(`wright serve exited before listening:\n${output}`));
      });
    });
  const kill = () =>
    new Promise<void>((done) => {
      const current = child as ChildProcess | null;
      if (!current || current.exitCode !== null || current.signalCode !== null) return done();
      current.once('exit', () => done());
      current.kill('SIGKILL');
    });
  let url = await launch('127.0.0.1:0');
  return {
    get url() {
      return url;
    },
    token,
    dataDir,
    async restart() {
      await kill();
      output += '\n[restart]\n';
      url = await launch(new URL(url).host);
    },
    async stop() {
      await kill();
      rmSync(dataDir, { recursive: true, force: true });
    },
    log: () => output,
  };
}

/** The scenario a conversation plays: the first user message, e.g. "scenario:form". */
export function scenarioOf(request: ModelRequest): string {
  const first = request.messages.find((message) => message.role === 'user');
  return /scenario:(\S+)/.exec(first?.content ?? '')?.[1] ?? '';
}

/** The tool results the model has seen so far in this conversation, oldest first. */
export function toolResults(request: ModelRequest): string[] {
  return request.messages.filter((message) => message.role === 'tool').map((message) => message.content ?? '');
}
