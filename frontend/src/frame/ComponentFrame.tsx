// An agent-written component, running in a Worker of a sandboxed iframe that draws what it
// renders (see srcdoc.ts and README.md).
// The parent side of the bridge: it checks every message (bridge.ts) and performs the few
// requests a component may make, always for this frame's own agent and conversation.
import { useEffect, useMemo, useRef, useState } from 'react';
import { api } from '../api/client';
import { useTheme } from '../theme';
import { callToolAnswer, checkFrameMessage, newNonce, RateLimit, RequestQueue } from './bridge';
import { guardFocus } from './focusGuard';
import { PROTOCOL, type FrameMessage, type ParentMessageBody } from './protocol';
import { frameDocument } from './srcdoc';

let runtimeText: Promise<string> | null = null;
function loadRuntime(): Promise<string> {
  // Built by `npm run build:frame`; a separate chunk, fetched the first time a frame shows.
  runtimeText ??= import('../../build/frame/frame-runtime.js?raw').then((module) => module.default);
  return runtimeText;
}

const MAX_HEIGHT = 4000;

/**
 * The compiled code of a stored component as the server has it now: its current version, and
 * only while it is enabled. A component deleted, rolled back or disabled (an installed one
 * waiting for review) never runs from an older copy: not from the pending call's row, not
 * from the tool call in history, not through importModule.
 */
export async function runnableCode(agent: string, name: string): Promise<string> {
  const component = await api.component(agent, name);
  if (!component.enabled) throw new Error(`the component “${name}” is disabled: a person must review and enable it in the admin page first`);
  return component.compiled_js;
}

export interface FrameContext {
  agent: string;
  conversationId: string;
  /** Who a message sent by this frame comes from: the stored component's name (or the call's
   * title for inline code). The server stores and shows the message as that component's. */
  component: string;
  /** Set while the call waits: callTool answers it. Absent for history, which is read-only. */
  onAnswer?: (answer: Record<string, unknown>) => Promise<void>;
}

/** A frame shown from history must not act on its own: it renders, reads state and imports,
 * but a component that sent a message or wrote state on every render would do so again on
 * every reload, with nobody asking. Only the live, pending call may have effects. */
const HISTORY_READ_ONLY = 'this component is shown from history: it can no longer send messages or change state';

// Requests of one frame that reach the API: two at a time, 32 waiting, 240 a minute.
const REQUESTS_IN_FLIGHT = 2;
const REQUESTS_QUEUED = 32;
const REQUESTS_PER_MINUTE = 240;

export function ComponentFrame({ code, props, context, title }: { code: string; props: Record<string, unknown>; context: FrameContext; title?: string }) {
  const frame = useRef<HTMLIFrameElement>(null);
  const [runtime, setRuntime] = useState<string | null>(null);
  const [height, setHeight] = useState(80);
  const [error, setError] = useState<string | null>(null);
  const [stopped, setStopped] = useState<string | null>(null);
  const { theme } = useTheme();
  const themeRef = useRef(theme);
  themeRef.current = theme;
  // A fresh nonce (and document) per code version: a new frame, never a reused one.
  const nonces = useMemo(() => ({ bridge: newNonce(), csp: newNonce() }), [code]);
  const contextRef = useRef(context);
  contextRef.current = context;
  const propsRef = useRef(props);
  propsRef.current = props;

  useEffect(() => {
    let live = true;
    loadRuntime().then(
      (text) => live && setRuntime(text),
      () => live && setError('The component runtime is missing (run `npm run build:frame`).'),
    );
    return () => {
      live = false;
    };
  }, []);

  const srcDoc = useMemo(() => (runtime ? frameDocument({ runtime, cspNonce: nonces.csp, bridgeNonce: nonces.bridge }) : null), [runtime, nonces]);

  useEffect(() => {
    const element = frame.current;
    if (!element || !srcDoc) return;
    const sendMessages = new RateLimit(5, 60_000);
    const requests = new RequestQueue(REQUESTS_IN_FLIGHT, REQUESTS_QUEUED, REQUESTS_PER_MINUTE);
    let answered = false;
    let loads = 0;
    const send = (message: ParentMessageBody) => {
      // The frame's origin is opaque, so it cannot be named as a target; the frame checks our nonce.
      element.contentWindow?.postMessage({ protocol: PROTOCOL, nonce: nonces.bridge, ...message }, '*');
    };
    const respond = (id: number, work: () => Promise<unknown>) => {
      work().then(
        (value) => send({ type: 'response', id, ok: true, value }),
        (failure: Error) => send({ type: 'response', id, ok: false, error: failure?.message ?? 'refused' }),
      );
    };
    const handle = (message: FrameMessage) => {
      const { agent, conversationId, component, onAnswer } = contextRef.current;
      switch (message.type) {
        case 'ready':
          send({ type: 'init', code, props: propsRef.current, interactive: Boolean(onAnswer), theme: themeRef.current });
          return;
        case 'resize':
          setHeight(Math.min(MAX_HEIGHT, Math.max(40, message.height)));
          return;
        case 'error':
          setError(message.message);
          return;
        case 'callTool':
          return respond(message.id, async () => {
            if (!onAnswer) throw new Error('this component is no longer waiting for an answer');
            if (answered) throw new Error('already answered');
            await onAnswer(callToolAnswer(message.action, message.payload));
            answered = true;
            return true;
          });
        case 'sendMessage':
          return respond(message.id, async () => {
            if (!onAnswer) throw new Error(HISTORY_READ_ONLY);
            if (!sendMessages.take()) throw new Error('too many messages; wait a minute');
            await api.postMessage(conversationId, message.text, component);
            return true;
          });
        case 'getState':
          return respond(message.id, () => requests.run(async () => (await api.getState(agent, message.key)).value ?? null));
        case 'setState':
          return respond(message.id, async () => {
            if (!onAnswer) throw new Error(HISTORY_READ_ONLY);
            await requests.run(() => api.setState(agent, message.key, message.value));
            return true;
          });
        case 'importModule':
          return respond(message.id, () => requests.run(() => runnableCode(agent, message.name)));
      }
    };
    const onMessage = (event: MessageEvent) => {
      const checked = checkFrameMessage(event, { window: element.contentWindow, nonce: nonces.bridge });
      if (checked.ok) handle(checked.message);
      else if (checked.id !== undefined) send({ type: 'response', id: checked.id, ok: false, error: `refused: ${checked.reason}` });
      else if (event.source === element.contentWindow) console.warn('component frame: message dropped:', checked.reason);
    };
    // The document loads once; a second load means the component navigated its frame away.
    const onLoad = () => {
      loads += 1;
      if (loads > 1) setStopped('This component navigated away from the canvas and was stopped.');
    };
    window.addEventListener('message', onMessage);
    element.addEventListener('load', onLoad);
    return () => {
      window.removeEventListener('message', onMessage);
      element.removeEventListener('load', onLoad);
    };
  }, [srcDoc, code, nonces]);

  useEffect(() => {
    if (!frame.current) return;
    return guardFocus(frame.current, () => setStopped('This component kept taking the keyboard focus on its own and was stopped.'));
  }, [srcDoc]);

  useEffect(() => {
    frame.current?.contentWindow?.postMessage({ protocol: PROTOCOL, nonce: nonces.bridge, type: 'theme', theme }, '*');
  }, [theme, nonces]);

  if (stopped) return <div className="alert alert-danger">{stopped}</div>;
  return (
    <div className="component-frame">
      {srcDoc ? (
        <iframe
          ref={frame}
          title={title ?? 'Agent component'}
          sandbox="allow-scripts"
          referrerPolicy="no-referrer"
          srcDoc={srcDoc}
          style={{ height }}
        />
      ) : (
        !error && <div className="frame-loading">Loading component…</div>
      )}
      {error && (
        <div className="alert alert-danger" role="alert">
          <span className="alert-icon" aria-hidden="true">
            ⛔
          </span>
          <div>
            <strong>Component error</strong>
            <pre className="frame-error">{error}</pre>
          </div>
        </div>
      )}
    </div>
  );
}
