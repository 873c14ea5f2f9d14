// The component's Worker: where the agent's code runs. The frame creates it from a blob: URL
// (so it inherits the frame's CSP: no fetch, no imports but blob:, no eval) and it has no DOM —
// no document, no window, no element to navigate, embed or load with. React renders here
// through our own renderer (renderer.ts) into ops the frame draws from an allowlist; the bridge
// (callTool, sendMessage, useAgentState, importModule) asks the frame, which asks the parent.
//
// What the compiled component must look like (the server compiles JSX to this):
//   an ES module; JSX as React.createElement / React.Fragment (classic runtime), or the
//   automatic runtime importing "react/jsx-runtime"; `export default` the component.
//   It may import only from "react", "react/jsx-runtime" and "wright"; everything listed in
//   GLOBALS below is also a global, so code written without imports works too.
import * as React from 'react';
import * as JsxRuntime from 'react/jsx-runtime';
import type { BridgeRequest, FrameToWorker, WorkerMessage } from '../tree';
import { primitives } from './primitives';
import { createRenderer, type Renderer } from './renderer';

interface WorkerScope {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void;
  addEventListener(type: 'unhandledrejection', listener: (event: PromiseRejectionEvent) => void): void;
  __wrightModules: Record<string, Record<string, unknown>>;
}
const scope = globalThis as unknown as WorkerScope;

// Taken before any component code runs, which may replace the global.
const postToFrame = scope.postMessage.bind(scope);
const send = (message: WorkerMessage) => postToFrame(message);

// WebRTC's data channel and frames are exposed to workers; without a peer connection (which
// workers lack) they reach nothing, but there is no reason to leave them about.
for (const name of Object.getOwnPropertyNames(globalThis)) {
  if (/^(webkit)?RTC/.test(name)) {
    try {
      delete (globalThis as Record<string, unknown>)[name];
    } catch {
      // non-configurable: left as it is
    }
  }
}

const errorText = (error: unknown) => String((error as Error)?.message ?? error);
const report = (error: unknown) => send({ t: 'error', message: errorText(error) });

let interactive = false;

// Requests to the parent (through the frame), answered by `response` messages with the same id.
let nextId = 1;
const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
function ask(type: BridgeRequest, fields: Record<string, unknown>): Promise<unknown> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    try {
      send({ t: 'request', type, id, fields });
    } catch (error) {
      // a value that cannot be cloned (a function, a DOM-less host object)
      waiting.delete(id);
      reject(error as Error);
    }
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

/** Sends a chat message, shown as this component's. */
async function sendMessage(text: string): Promise<void> {
  await ask('sendMessage', { text: String(text) });
}

/** Writes of one key go one at a time; while one is on its way, later values wait and only
 * the last is written next. A component that sets its state on every keystroke, or 10,000
 * times in a loop, makes a few requests instead of one per call (each would count against
 * its frame's request rate), and what is stored is still its last value. */
const stateWrites = new Map<string, { next: { value: unknown } | null; running: boolean }>();
function writeState(key: string, value: unknown, onError: (error: Error) => void) {
  let entry = stateWrites.get(key);
  if (!entry) stateWrites.set(key, (entry = { next: null, running: false }));
  const writes = entry;
  writes.next = { value };
  if (writes.running) return;
  const run = () => {
    const next = writes.next;
    writes.next = null;
    writes.running = next !== null;
    if (next) void ask('setState', { key, value: next.value }).catch(onError).finally(run);
  };
  run();
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
      writeState(key, resolved === undefined ? null : resolved, (error) => setMeta((m) => ({ ...m, error: error.message })));
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
Object.assign(globalThis, GLOBALS);
scope.__wrightModules = {
  react: { ...React, default: React },
  'react/jsx-runtime': { ...JsxRuntime },
  'react/jsx-dev-runtime': { ...JsxRuntime, jsxDEV: JsxRuntime.jsx },
  wright: { ...primitives, ...bridge },
};
const modules = scope.__wrightModules;

const shimUrls = new Map<string, string>();
function shimUrl(specifier: string): string {
  let url = shimUrls.get(specifier);
  if (!url) {
    const names = Object.keys(modules[specifier]).filter((name) => name !== 'default' && /^[A-Za-z_$][\w$]*$/.test(name));
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
    if (!Object.prototype.hasOwnProperty.call(modules, specifier)) {
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
  render() {
    return this.state.error ? <pre className="w-error">{errorText(this.state.error)}</pre> : this.props.children;
  }
}

// Made when the component arrives, while its module loads: compiling the reconciler is the
// largest part of the worker's start.
let renderer: Renderer | null = null;
const rendererNow = () => (renderer ??= createRenderer(send, report));
// Errors are drawn in the component's own area, as text (the boundary does the same): the app
// never draws a component's words outside its frame.
function showError(message: string) {
  rendererNow().render(<pre className="w-error">{message}</pre>);
}

async function start(message: Extract<FrameToWorker, { t: 'init' }>) {
  interactive = message.interactive === true;
  let module: Record<string, unknown>;
  try {
    const loading = loadModule(String(message.code));
    rendererNow();
    module = await loading;
  } catch (error) {
    showError(`The component failed to load: ${errorText(error)}`);
    return;
  }
  const Component = module.default;
  if (typeof Component !== 'function' && !(typeof Component === 'object' && Component !== null)) {
    showError('The component has no default export: end it with `export default function MyComponent(props) { ... }`.');
    return;
  }
  rendererNow().render(<Boundary>{React.createElement(Component as React.ComponentType<Record<string, unknown>>, message.props ?? {})}</Boundary>);
}

function answer(response: { id: number; ok: boolean; value?: unknown; error?: string }) {
  const request = waiting.get(response.id);
  if (!request) return;
  waiting.delete(response.id);
  if (response.ok) request.resolve(response.value);
  else request.reject(new Error(response.error ?? 'refused'));
}

let started = false;
scope.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as FrameToWorker | null;
  if (!data || typeof data !== 'object') return;
  if (data.t === 'init' && !started) {
    started = true;
    void start(data);
  } else if (data.t === 'event') {
    rendererNow().dispatch(data);
  } else if (data.t === 'response') {
    answer(data);
  } else if (data.t === 'responses' && Array.isArray(data.responses)) {
    for (const response of data.responses) answer(response);
  }
});
scope.addEventListener('unhandledrejection', (event) => report(event.reason));
