// The canvas: what the agent rendered (render_blocks, render_and_wait), newest first.
// Calls that wait for the person are answerable; answered ones stay as a read-only record.
import { useEffect, useState } from 'react';
import { ApiError, type Pending as PendingWithComponent } from '../api/client';
import { Blocks } from '../blocks/Blocks';
import type { Block } from '../blocks/types';
import { ComponentFrame, runnableCode } from '../frame/ComponentFrame';
import { COMPONENTS_CHANNEL } from '../frame/componentsChannel';
import { transcript, type ConversationState } from '../state/conversation';
import { resultInfo, type Unfinished } from './ToolCall';

interface CanvasItem {
  id: string;
  name: string;
  args: Record<string, unknown>;
  pending: PendingWithComponent | null;
  answer: unknown;
  /** Why the call ended without an answer (a cancel, a restart), when it did. */
  unfinished: Unfinished | null;
  createdAt: string;
}

export function canvasItems(state: ConversationState): CanvasItem[] {
  const pending = new Map(state.pending.map((call) => [call.tool_call_id, call]));
  const items: CanvasItem[] = [];
  for (const item of transcript(state.events)) {
    if (item.kind !== 'tool' || (item.name !== 'render_blocks' && item.name !== 'render_and_wait')) continue;
    const result = resultInfo(item.result);
    items.push({
      id: item.id,
      name: item.name,
      args: (item.args ?? {}) as Record<string, unknown>,
      pending: pending.get(item.id) ?? null,
      answer: result ? result.output : state.answered[item.id],
      unfinished: result?.unfinished?.reason ?? null,
      createdAt: item.call.created_at,
    });
  }
  // A pending call whose tool_call event we have not seen yet (it arrives on the stream).
  for (const call of state.pending) {
    if ((call.shown?.type === 'form' || call.shown?.type === 'component') && !items.some((item) => item.id === call.tool_call_id)) {
      items.push({ id: call.tool_call_id, name: call.tool_name, args: (call.args ?? {}) as Record<string, unknown>, pending: call, answer: state.answered[call.tool_call_id], unfinished: null, createdAt: call.created_at });
    }
  }
  return items.reverse();
}

function answerLabel(answer: unknown, unfinished: Unfinished | null): string {
  if (unfinished) return unfinished === 'failed' ? 'Not answered' : `Not answered (${unfinished})`;
  if (answer === undefined) return 'No answer';
  const action = typeof answer === 'object' && answer !== null && 'action' in answer ? answer.action : undefined;
  if (action === 'dismissed') return 'Dismissed';
  if (action === 'submit') return 'Submitted';
  return typeof action === 'string' ? `Answered: ${action}` : 'Answered';
}

/** Inline code seen with a pending call, kept for the page's life so an answered inline
 * component stays as it was (the server keeps inline code only while its call waits). */
const seenInlineCode = new Map<string, string>();

/** How often a shown stored component is looked up again: one deleted or disabled while its
 * page is open stops within this long (at once when the change is made in this browser, or
 * when the page comes back into view). */
const RECHECK_MS = 5000;

/** A failure that says what the server holds (gone, disabled, refused), not that it could not
 * be asked: only these stop a running component. */
const definitive = (failure: unknown) => !(failure instanceof ApiError) || (failure.status >= 400 && failure.status < 500);

/**
 * The code a render_and_wait call runs. A stored component (`component: name`) runs only as the
 * server has it now — current version, enabled — fetched at render time (runnableCode), never
 * the copy in the pending row or the tool call in history: deleted, rolled back or unreviewed
 * code does not come back. It is looked up again while it shows, so one deleted or disabled
 * stops running in an open page, and a new version replaces the old. Inline code has no other
 * copy than the call's own.
 */
function useComponentCode(agent: string, item: CanvasItem): { code: string | null; error: string | null } {
  const name = typeof item.args.component === 'string' ? item.args.component : null;
  const inline = name ? null : (item.pending?.component?.compiled_js ?? null);
  if (inline) seenInlineCode.set(item.id, inline);
  const given = name ? null : (inline ?? seenInlineCode.get(item.id) ?? null);
  const [fetched, setFetched] = useState<{ code: string | null; error: string | null }>({ code: null, error: null });
  useEffect(() => {
    if (!name) return;
    let live = true;
    const check = () => {
      runnableCode(agent, name).then(
        (code) => live && setFetched((current) => (current.code === code && !current.error ? current : { code, error: null })),
        (failure: Error) => {
          if (!live || !definitive(failure)) return;
          const error = `Component “${name}” is not shown: ${failure.message}`;
          setFetched((current) => (current.error === error ? current : { code: null, error }));
        },
      );
    };
    check();
    const timer = setInterval(() => document.visibilityState === 'visible' && check(), RECHECK_MS);
    const onVisible = () => document.visibilityState === 'visible' && check();
    document.addEventListener('visibilitychange', onVisible);
    const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(COMPONENTS_CHANNEL) : null;
    channel?.addEventListener('message', check);
    return () => {
      live = false;
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
      channel?.close();
    };
  }, [agent, name]);
  if (given) return { code: given, error: null };
  if (!name) return { code: null, error: item.pending ? 'This inline component has not been compiled by the server yet.' : 'Inline component (not kept after it was answered).' };
  return fetched;
}

/** How a component is named when it sends a message: its stored name, or its title when inline. */
function componentName(item: CanvasItem): string {
  const name = typeof item.args.component === 'string' ? item.args.component : typeof item.args.title === 'string' ? item.args.title : '';
  return name.trim().slice(0, 128) || 'inline component';
}

function ComponentItem({ agent, conversationId, item, onAnswer }: { agent: string; conversationId: string; item: CanvasItem; onAnswer: (toolCallId: string, answer: unknown) => Promise<void> }) {
  const { code, error } = useComponentCode(agent, item);
  const props = (item.args.props ?? {}) as Record<string, unknown>;
  if (error) return <div className="block-empty">{error}</div>;
  if (!code) return <div className="frame-loading">Loading component…</div>;
  return (
    <ComponentFrame
      code={code}
      props={props}
      title={typeof item.args.title === 'string' ? item.args.title : undefined}
      context={{ agent, conversationId, component: componentName(item), onAnswer: item.pending ? (answer) => onAnswer(item.id, answer) : undefined }}
    />
  );
}

export function Canvas({ agent, state, focus, onAnswer }: { agent: string; state: ConversationState; focus: string | null; onAnswer: (toolCallId: string, answer: unknown) => Promise<void> }) {
  const items = canvasItems(state);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (focus) document.getElementById(`canvas-${focus}`)?.scrollIntoView({ behavior: 'smooth', block: 'start' });
  }, [focus]);
  const answer = async (id: string, value: unknown) => {
    setError(null);
    try {
      await onAnswer(id, value);
    } catch (failure) {
      setError((failure as Error).message);
      throw failure;
    }
  };
  if (!items.length) {
    return (
      <section className="canvas canvas-empty" aria-label="Canvas">
        <div className="empty-state">
          <div className="empty-icon" aria-hidden="true">
            ▣
          </div>
          <h2>The canvas is empty</h2>
          <p className="muted">Tables, charts, forms and components the agent builds for you appear here.</p>
        </div>
      </section>
    );
  }
  const conversationId = state.conversation?.id ?? '';
  return (
    <section className="canvas" aria-label="Canvas">
      {error && (
        <div className="alert alert-danger" role="alert">
          <span className="alert-icon">⛔</span>
          <div>{error}</div>
        </div>
      )}
      {items.map((item) => (
        <article key={item.id} id={`canvas-${item.id}`} className={`canvas-card ${item.pending ? 'pending' : 'done'} ${focus === item.id ? 'focused' : ''}`}>
          <header className="canvas-card-head">
            <h3>{typeof item.args.title === 'string' && item.args.title ? item.args.title : item.name === 'render_blocks' ? 'Blocks' : `Component${typeof item.args.component === 'string' ? ` · ${item.args.component}` : ''}`}</h3>
            <span className={`pill ${item.pending ? 'pill-accent' : ''}`}>{item.pending ? 'Waiting for you' : answerLabel(item.answer, item.unfinished)}</span>
          </header>
          {item.name === 'render_blocks' ? (
            <Blocks blocks={(item.args.blocks ?? []) as Block[]} onAnswer={item.pending ? (value) => answer(item.id, value) : undefined} />
          ) : (
            <ComponentItem agent={agent} conversationId={conversationId} item={item} onAnswer={answer} />
          )}
        </article>
      ))}
    </section>
  );
}
