// An agent-written component, running in a Worker of a sandboxed iframe that draws what it
// renders (see srcdoc.ts and README.md).
// The parent side of the bridge: it checks every message (bridge.ts) and performs the few
// requests a component may make, always for this frame's own agent and conversation.
import { useEffect, useMemo, useRef, useState } from 'react';
import { api } from '../api/client';
import { useTheme } from '../theme';
import { callToolAnswer, checkFrameMessage, newNonce, RateLimit, RequestQueue } from './bridge';
import { guardFocus, type FocusGuard } from './focusGuard';
import { AnswerGate, TokenBucket } from './limits';
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

/** What a frame may send the parent: 100 messages a second, 200 at once. Its runtime sends far
 * less (it limits the component's requests itself); beyond this the parent drops messages unread. */
const MESSAGES_PER_SECOND = 100;
const MESSAGE_BURST = 200;
/** Messages dropped within five seconds that stop the frame. */
const DROPS_TO_STOP = 500;

const STOPPED_FLOODING = 'This component was stopped: it sent more than the canvas accepts.';
const STOPPED_LIMIT = 'This component was stopped: it drew more than the canvas allows.';

export function ComponentFrame({ code, props, context, title }: { code: string; props: Record<string, unknown>; context: FrameContext; title?: string }) {
  const frame = useRef<HTMLIFrameElement>(null);
  const [runtime, setRuntime] = useState<string | null>(null);
  const [height, setHeight] = useState(80);
  const [error, setError] = useState<string | null>(null);
  /** Stopped by the parent: the iframe is removed. */
  const [stopped, setStopped] = useState<string | null>(null);
  /** Stopped by the frame itself: the iframe stays and shows why, in its own area. */
  const [selfStopped, setSelfStopped] = useState<string | null>(null);
  /** Each restart is a new frame: a new document, nonce and worker. */
  const [generation, setGeneration] = useState(0);
  const { theme } = useTheme();
  const themeRef = useRef(theme);
  themeRef.current = theme;
  // A fresh nonce (and document) per code version and restart: a new frame, never a reused one.
  // eslint-disable-next-line react-hooks/exhaustive-deps -- code and generation name a new frame
  const nonces = useMemo(() => ({ bridge: newNonce(), csp: newNonce() }), [code, generation]);
  const contextRef = useRef(context);
  contextRef.current = context;
  const propsRef = useRef(props);
  propsRef.current = props;
  const guard = useRef<FocusGuard | null>(null);

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
    const source = element.contentWindow;
    const sendMessages = new RateLimit(5, 60_000);
    const requests = new RequestQueue(REQUESTS_IN_FLIGHT, REQUESTS_QUEUED, REQUESTS_PER_MINUTE);
    const budget = new TokenBucket(MESSAGES_PER_SECOND, MESSAGE_BURST);
    const drops = new RateLimit(DROPS_TO_STOP, 5000);
    let answered = false;
    let loads = 0;
    let done = false;
    const send = (message: ParentMessageBody) => {
      // The frame's origin is opaque, so it cannot be named as a target; the frame checks our nonce.
      // To the window the frame's messages are checked against (its WindowProxy, the same for
      // the frame's whole life).
      source?.postMessage({ protocol: PROTOCOL, nonce: nonces.bridge, ...message }, '*');
    };
    // Every answer, a refusal of a malformed request too, leaves on the gate's clock, never in
    // the task its request arrived in (see limits.ts).
    const answers = new AnswerGate<ParentMessageBody>((batch) => batch.forEach(send));
    const respond = (id: number, work: () => Promise<unknown>) => {
      work().then(
        (value) => answers.push({ type: 'response', id, ok: true, value }),
        (failure: Error) => answers.push({ type: 'response', id, ok: false, error: failure?.message ?? 'refused' }),
      );
    };
    const stopFrame = (message: string) => {
      done = true;
      answers.close();
      setStopped(message);
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
        case 'gesture':
          guard.current?.gesture();
          return;
        case 'stopped':
          answers.close();
          setSelfStopped(message.reason === 'flood' ? STOPPED_FLOODING : STOPPED_LIMIT);
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
      // Counted before anything of the message is read (reading `data` copies it in): a frame
      // over its budget costs the app next to nothing, and one that keeps going is stopped.
      if (done || event.source !== source) return;
      if (!budget.take()) {
        if (!drops.take()) stopFrame(STOPPED_FLOODING);
        return;
      }
      const checked = checkFrameMessage(event, { window: source, nonce: nonces.bridge });
      if (checked.ok) handle(checked.message);
      else if (checked.id !== undefined) {
        const id = checked.id;
        respond(id, () => Promise.reject(new Error(`refused: ${checked.reason}`)));
      }
    };
    // The document loads once; a second load means the component navigated its frame away.
    const onLoad = () => {
      loads += 1;
      if (loads > 1) stopFrame('This component navigated away from the canvas and was stopped.');
    };
    window.addEventListener('message', onMessage);
    element.addEventListener('load', onLoad);
    return () => {
      done = true;
      answers.close();
      window.removeEventListener('message', onMessage);
      element.removeEventListener('load', onLoad);
    };
  }, [srcDoc, code, nonces]);

  useEffect(() => {
    if (!frame.current) return;
    const focusGuard = guardFocus(frame.current, () => setStopped('This component kept taking the keyboard focus on its own and was stopped.'));
    guard.current = focusGuard;
    return () => {
      guard.current = null;
      focusGuard.dispose();
    };
  }, [srcDoc]);

  useEffect(() => {
    frame.current?.contentWindow?.postMessage({ protocol: PROTOCOL, nonce: nonces.bridge, type: 'theme', theme }, '*');
  }, [theme, nonces]);

  const restart = () => {
    setStopped(null);
    setSelfStopped(null);
    setGeneration((value) => value + 1);
  };
  const restartBar = (message: string) => (
    <div className="alert alert-danger frame-stopped" role="status">
      <span>{message}</span>
      <button type="button" className="button" onClick={restart}>
        Restart the component
      </button>
    </div>
  );

  if (stopped) return <div className="component-frame">{restartBar(stopped)}</div>;
  return (
    <div className="component-frame">
      {srcDoc ? (
        <iframe
          key={generation}
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
      {selfStopped && restartBar(selfStopped)}
      {error && (
        <div className="alert alert-danger" role="alert">
          <span className="alert-icon" aria-hidden="true">
            ⛔
          </span>
          <div>{error}</div>
        </div>
      )}
    </div>
  );
}
