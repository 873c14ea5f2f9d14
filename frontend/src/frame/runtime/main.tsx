// The runtime inside a component frame (an opaque-origin, sandboxed iframe; see srcdoc.ts).
// It receives the compiled component and its props from the parent, provides React, hooks,
// UI primitives and the bridge (callTool, sendMessage, useAgentState, importModule), and
// renders. It can reach the app only by postMessage, which the parent checks (bridge.ts).
//
// What the compiled component must look like (the server compiles JSX to this):
//   an ES module; JSX as React.createElement / React.Fragment (classic runtime), or the
//   automatic runtime importing "react/jsx-runtime"; `export default` the component.
//   It may import only from "react", "react/jsx-runtime" and "wright"; everything listed in
//   GLOBALS below is also a global, so code written without imports works too.
import * as React from 'react';
import * as JsxRuntime from 'react/jsx-runtime';
import { createRoot } from 'react-dom/client';
import { PROTOCOL, type ParentMessage } from '../protocol';
import { primitives } from './primitives';
import { frameStyles } from './styles';

declare global {
  interface Window {
    __wrightModules: Record<string, Record<string, unknown>>;
  }
}

// The bridge nonce proves to the parent that a message comes from this frame's runtime; it is
// taken out of the document before component code can look for it.
const bridgeMeta = document.querySelector('meta[name="wright-bridge"]');
const nonce = bridgeMeta?.getAttribute('content') ?? '';
bridgeMeta?.remove();

// WebRTC is the one way out of this frame that no CSP directive stops in Chromium (ICE
// sends STUN over UDP to any address the code names; `webrtc 'block'` is not implemented).
// So its constructors are removed from this realm before any component code runs. Other
// realms are out of reach: a child frame has an opaque origin of its own (cross-origin to
// us), and Trusted Types ('none') stop us writing a script into one (srcdoc, innerHTML).
for (const name of Object.getOwnPropertyNames(window)) {
  if (/^(webkit)?RTC/.test(name)) {
    delete (window as unknown as Record<string, unknown>)[name];
    if (name in window) Object.defineProperty(window, name, { value: undefined, configurable: false, writable: false });
  }
}
let interactive = false;

function post(type: string, fields: Record<string, unknown> = {}) {
  // '*' because an opaque-origin document cannot name its parent's origin; nothing secret is sent.
  window.parent.postMessage({ protocol: PROTOCOL, nonce, type, ...fields }, '*');
}

// Requests to the parent, answered by `response` messages with the same id.
let nextId = 1;
const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
function ask(type: string, fields: Record<string, unknown>): Promise<unknown> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    post(type, { id, ...fields });
  });
}

// ---- the bridge, as components see it -------------------------------------------------

let answered = false;
/** Answers the paused render_and_wait call with {action, ...payload}; once. */
async function callTool(action: string, payload: Record<string, unknown> = {}): Promise<void> {
  if (!interactive) throw new Error('This component is shown from history; it can no longer answer.');
  if (answered) throw new Error('This component has already answered.');
  await ask('callTool', { action: String(action), payload });
  answered = true;
}

/** Sends a chat message as the person. */
async function sendMessage(text: string): Promise<void> {
  await ask('sendMessage', { text: String(text) });
}

/** [value, setValue, {loaded, error}] bound to one key of the agent's state. */
function useAgentState<T>(key: string, initial: T): [T, (next: T | ((previous: T) => T)) => void, { loaded: boolean; error: string | null }] {
  const [value, setValue] = React.useState<T>(initial);
  const [meta, setMeta] = React.useState<{ loaded: boolean; error: string | null }>({ loaded: false, error: null });
  const current = React.useRef(value);
  current.current = value;
  React.useEffect(() => {
    let live = true;
    ask('getState', { key })
      .then((stored) => {
        if (!live) return;
        if (stored !== null && stored !== undefined) setValue(stored as T);
        setMeta({ loaded: true, error: null });
      })
      .catch((error: Error) => live && setMeta({ loaded: true, error: error.message }));
    return () => {
      live = false;
    };
  }, [key]);
  const update = React.useCallback(
    (next: T | ((previous: T) => T)) => {
      const resolved = typeof next === 'function' ? (next as (previous: T) => T)(current.current) : next;
      current.current = resolved;
      setValue(resolved);
      ask('setState', { key, value: resolved === undefined ? null : resolved }).catch((error: Error) => setMeta((m) => ({ ...m, error: error.message })));
    },
    [key],
  );
  return [value, update, meta];
}

const moduleCache = new Map<string, Promise<Record<string, unknown>>>();
/** Loads another stored component of the agent and returns its module (default + named exports). */
function importModule(name: string): Promise<Record<string, unknown>> {
  let loading = moduleCache.get(name);
  if (!loading) {
    loading = ask('importModule', { name }).then((code) => loadModule(String(code)));
    moduleCache.set(name, loading);
  }
  return loading;
}

// ---- module loading --------------------------------------------------------------------

const bridge = { callTool, sendMessage, useAgentState, importModule };
const GLOBALS: Record<string, unknown> = {
  React,
  ...Object.fromEntries(
    ['useState', 'useEffect', 'useLayoutEffect', 'useMemo', 'useCallback', 'useRef', 'useReducer', 'useContext', 'useId', 'useTransition', 'useDeferredValue', 'createContext', 'Fragment', 'memo', 'forwardRef'].map((name) => [name, (React as Record<string, unknown>)[name]]),
  ),
  ...primitives,
  ...bridge,
};
Object.assign(window, GLOBALS);
window.__wrightModules = {
  react: { ...React, default: React },
  'react/jsx-runtime': { ...JsxRuntime },
  'react/jsx-dev-runtime': { ...JsxRuntime, jsxDEV: JsxRuntime.jsx },
  wright: { ...primitives, ...bridge },
};

const shimUrls = new Map<string, string>();
function shimUrl(specifier: string): string {
  let url = shimUrls.get(specifier);
  if (!url) {
    const names = Object.keys(window.__wrightModules[specifier]).filter((name) => name !== 'default' && /^[A-Za-z_$][\w$]*$/.test(name));
    const source = `const m = globalThis.__wrightModules[${JSON.stringify(specifier)}];\nexport default (m.default ?? m);\nexport const { ${names.join(', ')} } = m;\n`;
    url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
    shimUrls.set(specifier, url);
  }
  return url;
}

/** Points the allowed bare imports at shim modules; refuses any other import. */
export function rewriteImports(code: string): string {
  return code.replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])([^"'\n]+)\2/g, (whole, lead: string, quote: string, specifier: string) => {
    if (specifier.startsWith('blob:')) return whole;
    if (!(specifier in window.__wrightModules)) {
      throw new Error(`Cannot import "${specifier}": a component may import only from "react" and "wright" (use importModule(name) for another stored component).`);
    }
    return `${lead}${quote}${shimUrl(specifier)}${quote}`;
  });
}

async function loadModule(code: string): Promise<Record<string, unknown>> {
  const url = URL.createObjectURL(new Blob([rewriteImports(code)], { type: 'text/javascript' }));
  try {
    return (await import(/* @vite-ignore */ url)) as Record<string, unknown>;
  } finally {
    URL.revokeObjectURL(url);
  }
}

// ---- rendering -------------------------------------------------------------------------

class Boundary extends React.Component<{ children: React.ReactNode }, { error: Error | null }> {
  state = { error: null as Error | null };
  static getDerivedStateFromError(error: Error) {
    return { error };
  }
  componentDidCatch(error: Error) {
    post('error', { message: error.message || String(error) });
  }
  render() {
    return this.state.error ? <pre className="w-error">{String(this.state.error.message || this.state.error)}</pre> : this.props.children;
  }
}

const root = createRoot(document.getElementById('root')!);
function showError(message: string) {
  root.render(<pre className="w-error">{message}</pre>);
  post('error', { message });
}

async function start(message: Extract<ParentMessage, { type: 'init' }>) {
  interactive = message.interactive;
  document.documentElement.dataset.theme = message.theme;
  let module: Record<string, unknown>;
  try {
    module = await loadModule(message.code);
  } catch (error) {
    showError(`The component failed to load: ${(error as Error).message ?? String(error)}`);
    return;
  }
  const Component = module.default;
  if (typeof Component !== 'function' && !(typeof Component === 'object' && Component !== null)) {
    showError('The component has no default export: end it with `export default function MyComponent(props) { ... }`.');
    return;
  }
  root.render(
    <Boundary>
      {React.createElement(Component as React.ComponentType<Record<string, unknown>>, message.props ?? {})}
    </Boundary>,
  );
}

let started = false;
window.addEventListener('message', (event: MessageEvent) => {
  if (event.source !== window.parent) return;
  const data = event.data as ParentMessage | null;
  if (!data || data.protocol !== PROTOCOL || data.nonce !== nonce) return;
  if (data.type === 'init' && !started) {
    started = true;
    void start(data);
  } else if (data.type === 'theme') {
    document.documentElement.dataset.theme = data.theme;
  } else if (data.type === 'response') {
    const request = waiting.get(data.id);
    if (!request) return;
    waiting.delete(data.id);
    if (data.ok) request.resolve(data.value);
    else request.reject(new Error(data.error ?? 'refused'));
  }
});

const style = document.createElement('style');
style.textContent = frameStyles;
document.head.appendChild(style);

// Tell the parent how tall we are, so the canvas can size the iframe to its content.
let lastHeight = -1;
new ResizeObserver(() => {
  const height = Math.ceil(document.documentElement.scrollHeight);
  if (height !== lastHeight) {
    lastHeight = height;
    post('resize', { height });
  }
}).observe(document.documentElement);

window.addEventListener('error', (event) => post('error', { message: event.message }));
window.addEventListener('unhandledrejection', (event) => post('error', { message: String((event.reason as Error)?.message ?? event.reason) }));
// Say we are ready until the parent answers with init (its listener may attach after our load).
post('ready');
let readyTries = 0;
const readyTimer = setInterval(() => {
  if (started || ++readyTries > 50) clearInterval(readyTimer);
  else post('ready');
}, 100);
