// The parent's gate for messages from a component frame. A message is accepted only if
//   - it comes from the frame's own window (`event.source`) with the opaque origin 'null'
//     (the iframe is sandboxed with allow-scripts and never allow-same-origin),
//   - it carries this frame's protocol tag and per-frame nonce,
//   - its type is on the allowlist and its fields have the right types and sizes,
//   - it is no larger than MAX_MESSAGE_BYTES (MAX_STATE_BYTES for setState).
// Everything else is dropped with a reason (for tests and the console), never acted on.
import {
  COMPONENT_NAME,
  FRAME_MESSAGE_TYPES,
  MAX_ACTION_CHARS,
  MAX_KEY_CHARS,
  MAX_MESSAGE_BYTES,
  MAX_STATE_BYTES,
  MAX_TEXT_CHARS,
  PROTOCOL,
  STOP_REASONS,
  type FrameMessage,
  type StopReason,
} from './protocol';

export interface FrameIdentity {
  /** The iframe's contentWindow. */
  window: MessageEventSource | null;
  nonce: string;
}

/** A refused message; `id` is set when it was a request from the frame itself (right source,
 * nonce and type) whose fields failed, so the frame gets an error reply instead of waiting. */
export type CheckResult = { ok: true; message: FrameMessage } | { ok: false; reason: string; id?: number };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function jsonSize(value: unknown): number {
  try {
    return new TextEncoder().encode(JSON.stringify(value)).length;
  } catch {
    return Infinity;
  }
}

const isId = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

export function checkFrameMessage(event: Pick<MessageEvent, 'origin' | 'source' | 'data'>, frame: FrameIdentity): CheckResult {
  if (!frame.window || event.source !== frame.window) return { ok: false, reason: 'wrong source' };
  if (event.origin !== 'null') return { ok: false, reason: 'wrong origin' };
  const data: unknown = event.data;
  if (!isRecord(data) || data.protocol !== PROTOCOL) return { ok: false, reason: 'not a frame message' };
  if (typeof data.nonce !== 'string' || data.nonce !== frame.nonce) return { ok: false, reason: 'wrong nonce' };
  const type = data.type;
  if (typeof type !== 'string' || !(FRAME_MESSAGE_TYPES as readonly string[]).includes(type)) return { ok: false, reason: 'unknown type' };
  const size = jsonSize(data);
  const refused = (reason: string): CheckResult => (isId(data.id) ? { ok: false, reason, id: data.id } : { ok: false, reason });
  if (size > (type === 'setState' ? MAX_STATE_BYTES : MAX_MESSAGE_BYTES)) return refused('too large');

  switch (type) {
    case 'ready':
      return { ok: true, message: { type } };
    case 'resize':
      return typeof data.height === 'number' && Number.isFinite(data.height) && data.height >= 0
        ? { ok: true, message: { type, height: data.height } }
        : { ok: false, reason: 'bad fields' };
    case 'gesture':
      return { ok: true, message: { type } };
    case 'stopped':
      return (STOP_REASONS as readonly unknown[]).includes(data.reason) ? { ok: true, message: { type, reason: data.reason as StopReason } } : { ok: false, reason: 'bad fields' };
    case 'callTool': {
      const payload = data.payload === undefined || data.payload === null ? {} : data.payload;
      if (!isId(data.id) || typeof data.action !== 'string' || !data.action || data.action.length > MAX_ACTION_CHARS || !isRecord(payload)) {
        return refused('bad fields');
      }
      return { ok: true, message: { type, id: data.id, action: data.action, payload } };
    }
    case 'sendMessage':
      if (!isId(data.id) || typeof data.text !== 'string' || !data.text.trim() || data.text.length > MAX_TEXT_CHARS) return refused('bad fields');
      return { ok: true, message: { type, id: data.id, text: data.text } };
    case 'getState':
      if (!isId(data.id) || typeof data.key !== 'string' || !data.key || data.key.length > MAX_KEY_CHARS) return refused('bad fields');
      return { ok: true, message: { type, id: data.id, key: data.key } };
    case 'setState':
      if (!isId(data.id) || typeof data.key !== 'string' || !data.key || data.key.length > MAX_KEY_CHARS || data.value === undefined) {
        return refused('bad fields');
      }
      return { ok: true, message: { type, id: data.id, key: data.key, value: data.value } };
    case 'importModule':
      if (!isId(data.id) || typeof data.name !== 'string' || !COMPONENT_NAME.test(data.name)) return refused('not a component name');
      return { ok: true, message: { type, id: data.id, name: data.name } };
  }
  return { ok: false, reason: 'unknown type' };
}

/** The answer a render_and_wait call resolves with when the component calls callTool. */
export function callToolAnswer(action: string, payload: Record<string, unknown>): Record<string, unknown> {
  const rest = { ...payload };
  delete rest.action; // the action argument wins over a payload field of the same name
  return { action, ...rest };
}

/** A per-frame nonce: 128 random bits, hex. */
export function newNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** A sliding-window limiter for requests that have effects outside the frame. */
export class RateLimit {
  private times: number[] = [];
  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}
  take(now = Date.now()): boolean {
    this.times = this.times.filter((time) => now - time < this.windowMs);
    if (this.times.length >= this.max) return false;
    this.times.push(now);
    return true;
  }
}

/**
 * The frame's requests to the API, at most `inFlight` at a time and `queued` waiting: the
 * browser opens only a few connections per host, and a component that asks without pause
 * would otherwise hold them all and stall the app's own requests. Beyond the queue, and beyond
 * `perMinute`, a request is refused at once (the component gets an error, not a hang).
 */
export class RequestQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly rate: RateLimit;
  constructor(
    private readonly inFlight: number,
    private readonly queued: number,
    perMinute: number,
  ) {
    this.rate = new RateLimit(perMinute, 60_000);
  }
  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.waiting.length >= this.queued || !this.rate.take()) return Promise.reject(new Error('too many requests from this component; slow down'));
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        this.running += 1;
        work()
          .then(resolve, reject)
          .finally(() => {
            this.running -= 1;
            this.waiting.shift()?.();
          });
      };
      if (this.running < this.inFlight) start();
      else this.waiting.push(start);
    });
  }
}
