// The runtime inside a component frame (an opaque-origin, sandboxed iframe; see srcdoc.ts).
// No component code runs here. The frame starts a dedicated Worker from a blob: URL (the
// worker bundle, worker/main.tsx) and gives it the component; the worker has no DOM and sends
// back its element tree, which the frame draws from an allowlist (surface.ts). A document
// that runs agent code can attempt a navigation (location, a child frame, meta refresh, a
// download), and Chromium resolves and preconnects to its host before CSP refuses it; a worker
// cannot attempt one, and the frame draws nothing that names a URL.
//
// The frame relays the bridge: the worker's requests go to the parent (which checks and
// performs them, see ../bridge.ts) with this frame's nonce, which the worker never sees; the
// answers go back to the worker.
import workerSource from '../../../build/frame-worker/frame-worker.js?raw';
import { AnswerGate, FloodGuard, TokenBucket } from '../limits';
import { PROTOCOL, type ParentMessage, type StopReason } from '../protocol';
import { BRIDGE_REQUESTS, DEFAULT_LIMITS, type FrameToWorker, type WorkerMessage } from '../tree';
import { frameStyles } from './styles';
import { Surface } from './surface';

// First, the worker: its start (a thread, React and our renderer compiled in a fresh realm) is
// most of the time a component takes to show. Its script is a blob: URL this runtime makes;
// Trusted Types (srcdoc.ts) allow it through the one policy the frame's CSP names, created here
// before anything else could.
const trustedTypes = (window as unknown as { trustedTypes?: { createPolicy(name: string, rules: { createScriptURL(url: string): string }): { createScriptURL(url: string): unknown } } }).trustedTypes;
const policy = trustedTypes?.createPolicy('wright-worker', { createScriptURL: (url: string) => url });
const workerUrl = URL.createObjectURL(new Blob([workerSource], { type: 'text/javascript' }));
const worker = new Worker((policy ? policy.createScriptURL(workerUrl) : workerUrl) as string, { name: 'component' });

/** Bridge requests passed on to the parent: a component that saves its state on every change
 * stays under this; beyond it they are refused here, with no round trip to the app. */
const REQUESTS_PER_SECOND = 40;
const REQUEST_BURST = 80;

// The bridge nonce proves to the parent that a message comes from this frame's runtime.
const bridgeMeta = document.querySelector('meta[name="wright-bridge"]');
const nonce = bridgeMeta?.getAttribute('content') ?? '';
bridgeMeta?.remove();

// WebRTC is the one way out of a document that no CSP directive stops in Chromium. No agent
// code runs in this realm any more, but nothing here needs it either.
for (const name of Object.getOwnPropertyNames(window)) {
  if (/^(webkit)?RTC/.test(name)) {
    delete (window as unknown as Record<string, unknown>)[name];
    if (name in window) Object.defineProperty(window, name, { value: undefined, configurable: false, writable: false });
  }
}

function post(type: string, fields: Record<string, unknown> = {}) {
  // '*' because an opaque-origin document cannot name its parent's origin; nothing secret is sent.
  window.parent.postMessage({ ...fields, protocol: PROTOCOL, nonce, type }, '*');
}

const style = document.createElement('style');
style.textContent = frameStyles;
document.head.appendChild(style);

const toWorker = (message: FrameToWorker) => worker.postMessage(message);

// The component's errors are shown here, as plain text in its own area, never by the app: text
// the app drew outside the frame could pass for the app's own (a "session expired" notice). The
// latest one only, drawn at most every 250 ms however many arrive.
const MAX_ERROR_CHARS = 4000;
const errorArea = document.createElement('pre');
errorArea.className = 'w-frame-error';
errorArea.setAttribute('role', 'alert');
errorArea.hidden = true;
document.body.appendChild(errorArea);
let latestError: string | null = null;
let errorTimer: ReturnType<typeof setTimeout> | null = null;
function showError(message: unknown) {
  latestError = String(message).slice(0, MAX_ERROR_CHARS);
  errorTimer ??= setTimeout(() => {
    errorTimer = null;
    errorArea.textContent = latestError;
    errorArea.hidden = false;
  }, 250);
}

let stopped = false;
function stop(reason: StopReason, message: string) {
  if (stopped) return;
  stopped = true;
  worker.terminate();
  refusals.close();
  latestError = message;
  errorArea.textContent = message;
  errorArea.hidden = false;
  post('stopped', { reason });
}

// Focus goes where the keys go. A component's ref.focus() is obeyed only right after the
// person's own pointer down or key in this frame (trusted events: the worker cannot make
// them), and the parent hears of a pointer down so that focus entering the frame with it is
// known to be the person's (focusGuard.ts).
// As long as the browser's own user activation lasts: the worker answers a click a moment
// later, longer on a busy machine, and focus is already in the frame (`hasFocus`) anyway.
const GESTURE_MS = 5000;
let gestureAt = -Infinity;
document.addEventListener(
  'pointerdown',
  (event) => {
    if (!event.isTrusted) return;
    gestureAt = performance.now();
    post('gesture');
  },
  true,
);
document.addEventListener('keydown', (event) => event.isTrusted && (gestureAt = performance.now()), true);
const personActed = () => document.hasFocus() && performance.now() - gestureAt < GESTURE_MS;

const isColor = (value: string) => CSS.supports('color', value);
const surface = new Surface(document.getElementById('root')!, toWorker, isColor, DEFAULT_LIMITS, personActed);

// What the worker may send: a flood guard over all of it (counted before a message is read),
// and the bridge's requests passed on at a bounded rate; over it, refused here, on the clock.
const flood = new FloodGuard();
const requests = new TokenBucket(REQUESTS_PER_SECOND, REQUEST_BURST);
const refusals = new AnswerGate<{ id: number; ok: false; error: string }>((responses) => toWorker({ t: 'responses', responses }));

worker.addEventListener('message', (event: MessageEvent) => {
  if (stopped) return;
  if (!flood.begin()) {
    stop('flood', 'The component was stopped: it sent more than the canvas accepts.');
    return;
  }
  try {
    handle(event.data as WorkerMessage | null);
  } finally {
    flood.end();
  }
});

function handle(data: WorkerMessage | null) {
  if (!data || typeof data !== 'object') return;
  switch (data.t) {
    case 'ops':
      try {
        surface.apply(data.ops);
      } catch (error) {
        stop('limit', `The component was stopped: ${(error as Error).message}.`);
      }
      return;
    case 'ack':
      surface.ack(data.seq);
      return;
    case 'call':
      surface.call(data.id, data.method);
      return;
    case 'error':
      showError(data.message);
      return;
    case 'request': {
      // Only the bridge's requests, with the worker's fields under the frame's own protocol,
      // nonce and type (spread first, so the worker cannot set those); the parent checks the rest.
      if (!(BRIDGE_REQUESTS as readonly unknown[]).includes(data.type) || typeof data.fields !== 'object' || data.fields === null) return;
      if (!requests.take()) {
        if (typeof data.id === 'number') refusals.push({ id: data.id, ok: false, error: 'too many requests from this component; slow down' });
        return;
      }
      post(data.type, { ...(data.fields as Record<string, unknown>), id: data.id });
      return;
    }
  }
}
worker.addEventListener('error', (event: ErrorEvent) => {
  if (!stopped) showError(event.message);
});

let started = false;
window.addEventListener('message', (event: MessageEvent) => {
  if (event.source !== window.parent) return;
  const data = event.data as ParentMessage | null;
  if (!data || data.protocol !== PROTOCOL || data.nonce !== nonce) return;
  if (data.type === 'init' && !started) {
    started = true;
    document.documentElement.dataset.theme = data.theme;
    toWorker({ t: 'init', code: data.code, props: data.props, interactive: data.interactive });
  } else if (data.type === 'theme') {
    document.documentElement.dataset.theme = data.theme;
  } else if (data.type === 'response') {
    toWorker({ t: 'response', id: data.id, ok: data.ok, value: data.value, error: data.error });
  }
});

// Tell the parent how tall we are, so the canvas can size the iframe to its content.
let lastHeight = -1;
new ResizeObserver(() => {
  const height = Math.ceil(document.documentElement.scrollHeight);
  if (height !== lastHeight) {
    lastHeight = height;
    post('resize', { height });
  }
}).observe(document.documentElement);

window.addEventListener('error', (event) => showError(event.message));
// Say we are ready until the parent answers with init (its listener may attach after our load).
post('ready');
let readyTries = 0;
const readyTimer = setInterval(() => {
  if (started || ++readyTries > 50) clearInterval(readyTimer);
  else post('ready');
}, 100);
