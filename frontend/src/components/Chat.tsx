// The chat panel: the transcript (messages, tool calls, notices, streaming text), the
// pending ask_user question, and the composer.
import { useEffect, useLayoutEffect, useRef, useState, type KeyboardEvent } from 'react';
import type { ApiError, Status } from '../api/client';
import { Markdown } from '../blocks/Markdown';
import { transcript, type ConversationState, type TranscriptItem } from '../state/conversation';
import { Approval } from './Approval';
import { AskUser } from './AskUser';
import { ProviderNotice } from './ProviderNotice';
import { ToolCall, resultInfo } from './ToolCall';
import { UsageMeter } from './UsageMeter';
import { Thumbs, runOf } from './Thumbs';
import { useOutcomes } from '../api/queries';
import type { RunOutcome } from '../api/client';

const CANVAS_TOOLS = new Set(['render_blocks', 'render_and_wait']);

function time(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/** What an answer's thumbs need: present only for answers of finished runs. */
type Rating = { conversation: string; rated: NonNullable<RunOutcome['rating']> | null; onRated: () => void };

function Item({ item, pendingIds, running, onShowCanvas, rating }: { item: TranscriptItem; pendingIds: Set<string>; running: boolean; onShowCanvas: (id: string) => void; rating: Rating | null }) {
  if (item.kind === 'tool') {
    const args = (item.args ?? {}) as Record<string, unknown>;
    if (item.name === 'send_message' && typeof args.text === 'string') {
      return (
        <div className="msg msg-assistant">
          <Markdown content={args.text} />
        </div>
      );
    }
    // A pending question is asked by the AskUser box at the end of the transcript.
    if (item.name === 'ask_user' && pendingIds.has(item.id)) return null;
    if (item.name === 'ask_user') {
      const info = resultInfo(item.result);
      const answer = info?.output;
      const given = typeof answer === 'object' && answer !== null && 'answer' in answer ? answer.answer : undefined;
      const dismissed = typeof answer === 'object' && answer !== null && 'action' in answer && answer.action === 'dismissed';
      return (
        <div className="msg msg-assistant ask-done">
          <Markdown content={String(args.question ?? '')} />
          <div className="ask-answer">
            {info?.unfinished
              ? `↳ (not answered: the call was ${info.unfinished.reason})`
              : given !== undefined
                ? `↳ ${String(given)}`
                : dismissed
                  ? '↳ (no answer; the conversation moved on)'
                  : ''}
          </div>
        </div>
      );
    }
    if (CANVAS_TOOLS.has(item.name)) {
      const waiting = pendingIds.has(item.id);
      return (
        <button type="button" className={`canvas-link ${waiting ? 'waiting' : ''}`} onClick={() => onShowCanvas(item.id)}>
          <span aria-hidden="true">▣</span> {typeof args.title === 'string' && args.title ? args.title : item.name === 'render_blocks' ? 'Blocks' : `Component ${String(args.component ?? '')}`}
          <span className="canvas-link-state">{waiting ? 'waiting for you — open in canvas' : 'shown in canvas'}</span>
        </button>
      );
    }
    return <ToolCall name={item.name} args={item.args} result={item.result} waiting={pendingIds.has(item.id)} running={running} />;
  }
  const { event } = item;
  switch (event.kind) {
    case 'user': {
      if (event.component) {
        // Not the person's words: shown apart, on the agent's side, under the component's name.
        return (
          <div className="msg msg-component" role="note" aria-label={`Message from the component ${event.component}`}>
            <div className="msg-component-label">▣ sent by the component “{event.component}”, not by you</div>
            <div className="bubble">{event.text}</div>
            <div className="msg-time">{time(event.created_at)}</div>
          </div>
        );
      }
      return (
        <div className="msg msg-user">
          <div className="bubble">{event.text}</div>
          <div className="msg-time">{time(event.created_at)}</div>
        </div>
      );
    }
    case 'assistant':
      return event.text.trim() ? (
        <div className="msg msg-assistant">
          <Markdown content={event.text} />
          {rating && <Thumbs conversation={rating.conversation} seq={event.seq} rated={rating.rated} onRated={rating.onRated} />}
        </div>
      ) : null;
    case 'notice':
      if (event.type === 'compaction') {
        return (
          <details className="notice-detail">
            <summary>{event.content}</summary>
            <Markdown content={event.summary} />
          </details>
        );
      }
      return (
        <div className={`notice notice-${event.type}`} role="note">
          {event.content}
        </div>
      );
    case 'tool_result': // a result whose call we do not have
      return (
        <div className="notice" role="note">
          {event.content}
        </div>
      );
    case 'tool_call': // paired into a tool item by transcript()
      return null;
  }
}

export function Chat({
  state,
  status,
  onSend,
  onCancel,
  onAnswer,
  onShowCanvas,
  commandReply = null,
  conversationId: conversationIdGiven,
}: {
  state: ConversationState;
  status: Status | null;
  onSend: (text: string) => Promise<void>;
  onCancel: () => Promise<void>;
  onAnswer: (toolCallId: string, answer: unknown) => Promise<void>;
  onShowCanvas: (toolCallId: string) => void;
  /** The answer of a command typed here (`/codestats`, …): shown, not stored. */
  commandReply?: string | null;
  /** The conversation's id, for its usage meter (none: no meter). */
  conversationId?: string;
}) {
  const [draft, setDraft] = useState('');
  const [sendError, setSendError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const scroller = useRef<HTMLDivElement>(null);
  const composer = useRef<HTMLTextAreaElement>(null);
  const stick = useRef(true);
  const items = transcript(state.events);
  const pendingIds = new Set(state.pending.map((call) => call.tool_call_id));
  const question = state.pending.find((call) => call.shown?.type === 'question');
  const approvals = state.pending.filter((call) => call.kind === 'approval');
  const running = state.status === 'running';
  const noProvider = status !== null && !status.provider;
  const conversationId = conversationIdGiven ?? state.conversation?.id ?? null;
  const outcomes = useOutcomes(conversationId, running ? -1 : state.lastSeq);
  /** The thumbs of the answer at `seq`: only once its run has finished (has an outcome). */
  const ratingOf = (seq: number): Rating | null => {
    const run = conversationId && outcomes.data ? runOf(outcomes.data, seq) : undefined;
    if (!conversationId || !run || seq > run.end_seq) return null;
    return { conversation: conversationId, rated: run.rating ?? null, onRated: () => void outcomes.refetch() };
  };

  // Follow the bottom while the reader is there; leave them alone when they scrolled up.
  useLayoutEffect(() => {
    const element = scroller.current;
    if (element && stick.current) element.scrollTop = element.scrollHeight;
  });
  useEffect(() => {
    composer.current?.focus();
  }, []);

  const send = async () => {
    const text = draft.trim();
    if (!text || sending) return;
    setSending(true);
    setSendError(null);
    try {
      await onSend(text);
      setDraft('');
      stick.current = true;
    } catch (failure) {
      const error = failure as ApiError;
      setSendError(error.code === 'no_provider' ? 'No model is configured yet — see the note above.' : error.message);
    } finally {
      setSending(false);
    }
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    } else if (event.key === 'Escape' && running) {
      event.preventDefault();
      void onCancel();
    }
  };

  const empty = state.loaded && items.length === 0 && !state.streaming;
  return (
    <section className="chat" aria-label="Chat">
      <div className="transcript" ref={scroller} onScroll={(event) => {
        const element = event.currentTarget;
        stick.current = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
      }} aria-live="polite">
        {noProvider && status && <ProviderNotice status={status} />}
        {empty && !noProvider && (
          <div className="empty-state">
            <h2>Start the conversation</h2>
            <p className="muted">Ask for something, or tell the agent how you like to work — it keeps notes and improves its own instructions as you go.</p>
          </div>
        )}
        {!state.loaded && <div className="loading-line">Loading conversation…</div>}
        {items.map((item) => (
          <Item
            key={item.kind === 'tool' ? `t-${item.call.seq}` : `e-${item.event.seq}`}
            item={item}
            pendingIds={pendingIds}
            running={running}
            onShowCanvas={onShowCanvas}
            rating={item.kind === 'message' ? ratingOf(item.event.seq) : null}
          />
        ))}
        {state.streaming && (
          <div className="msg msg-assistant streaming">
            <Markdown content={state.streaming} />
          </div>
        )}
        {commandReply && (
          <div className="notice command-reply" role="note" aria-label="Command reply">
            <Markdown content={commandReply} />
          </div>
        )}
        {running && !state.streaming && (
          <div className="thinking" role="status">
            <span className="dots" aria-hidden="true">
              <i />
              <i />
              <i />
            </span>
            Working…
          </div>
        )}
        {state.status === 'error' && (
          <div className="alert alert-danger" role="alert">
            <span className="alert-icon" aria-hidden="true">
              ⛔
            </span>
            <div>
              <strong>The run stopped with an error.</strong>
              <div>{state.error}</div>
            </div>
          </div>
        )}
        {question && (
          <AskUser
            key={question.tool_call_id}
            question={String((question.args as { question?: unknown })?.question ?? '')}
            options={(question.args as { options?: string[] })?.options}
            onAnswer={(answer) => onAnswer(question.tool_call_id, answer)}
          />
        )}
        {approvals.map((call) => (
          <Approval
            key={call.tool_call_id}
            tool={call.tool_name}
            args={call.args}
            reason={call.shown?.type === 'approval' ? call.shown.reason : null}
            onAnswer={(answer) => onAnswer(call.tool_call_id, answer)}
          />
        ))}
      </div>
      <div className="composer">
        {sendError && (
          <div className="field-error" role="alert">
            {sendError}
          </div>
        )}
        <div className="composer-box">
          <textarea
            ref={composer}
            aria-label="Message"
            placeholder={noProvider ? 'Configure a model to start chatting' : 'Message your agent'}
            title="Enter to send · Shift+Enter for a new line · Esc to stop a run"
            rows={Math.min(8, Math.max(1, draft.split('\n').length))}
            value={draft}
            onChange={(event) => setDraft(event.target.value)}
            onKeyDown={onKeyDown}
          />
          {running ? (
            <button type="button" className="button danger" onClick={() => void onCancel()} title="Stop (Esc)">
              Stop
            </button>
          ) : (
            <button type="button" className="button primary" onClick={() => void send()} disabled={!draft.trim() || sending} title="Send (Enter)">
              Send
            </button>
          )}
        </div>
        {conversationId && <UsageMeter conversation={conversationId} revision={`${state.events.length}/${state.status}`} />}
      </div>
    </section>
  );
}
