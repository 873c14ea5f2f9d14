// What the page knows about one conversation, built from the detail route and the SSE
// stream. A pure reducer, so replay, deltas and status changes are tested without a server.
//
// The stream replays stored events after the last seq we have, so after a reconnect the
// same event may arrive twice: events are keyed by seq and a known seq is ignored.
import type { ConversationDetail, Conversation, ConversationStatus, StoredEvent, ToolCallEvent, ToolResultEvent } from '../api/client';
import type { Pending as PendingWithComponent } from '../api/client';

export type RunStatus = ConversationStatus;
const RUN_STATUSES = ['idle', 'running', 'waiting', 'error'] as const satisfies readonly RunStatus[];

export interface ConversationState {
  conversation: Conversation | null;
  /** Stored events in seq order, without duplicates. */
  events: StoredEvent[];
  /** The highest seq seen: where a reconnecting stream resumes (`?after=`). */
  lastSeq: number;
  /** Assistant text streamed since the last stored event; replaced by the stored assistant event. */
  streaming: string;
  status: RunStatus;
  /** The error of the last run, when status is `error`. */
  error: string | null;
  /** Calls waiting for the person, oldest first. */
  pending: PendingWithComponent[];
  /** Answers this page sent, by tool_call_id, until the stored tool_result arrives. */
  answered: Record<string, unknown>;
  loaded: boolean;
}

export type ConversationAction =
  | { type: 'loaded'; detail: ConversationDetail }
  | { type: 'event'; event: StoredEvent }
  | { type: 'delta'; text: string }
  | { type: 'status'; status: string; error?: string | null }
  | { type: 'pending'; pending: PendingWithComponent[] }
  | { type: 'answered'; toolCallId: string; answer: unknown }
  /** The person's message was accepted; `sinceSeq` is the last seq known when it was sent. */
  | { type: 'user-sent'; sinceSeq: number };

export const initialConversationState: ConversationState = {
  conversation: null,
  events: [],
  lastSeq: 0,
  streaming: '',
  status: 'idle',
  error: null,
  pending: [],
  answered: {},
  loaded: false,
};

/** A status read from the stream's `status` message (not in the OpenAPI document); unknown ones read as idle. */
export function asRunStatus(status: string): RunStatus {
  return RUN_STATUSES.find((known) => known === status) ?? 'idle';
}

function mergeEvents(known: StoredEvent[], incoming: StoredEvent[]): StoredEvent[] {
  const bySeq = new Map<number, StoredEvent>();
  for (const event of known) bySeq.set(event.seq, event);
  for (const event of incoming) bySeq.set(event.seq, event);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/** The tool_call_id a tool_result event answers, if it is one. */
export function resultCallId(event: StoredEvent): string | null {
  return event.kind === 'tool_result' ? event.tool_call_id : null;
}

export function conversationReducer(state: ConversationState, action: ConversationAction): ConversationState {
  switch (action.type) {
    case 'loaded': {
      const events = mergeEvents(state.events, action.detail.events);
      const lastSeq = events.length ? events[events.length - 1].seq : 0;
      return {
        ...state,
        conversation: action.detail.conversation,
        events,
        lastSeq: Math.max(lastSeq, state.lastSeq),
        status: action.detail.conversation.status,
        pending: action.detail.pending,
        loaded: true,
      };
    }
    case 'event': {
      const { event } = action;
      if (state.events.some((known) => known.seq === event.seq)) return state;
      const events = event.seq > state.lastSeq ? [...state.events, event] : mergeEvents(state.events, [event]);
      const answered = resultCallId(event);
      return {
        ...state,
        events,
        lastSeq: Math.max(state.lastSeq, event.seq),
        // The stored assistant text replaces what streamed; any later text is a new message.
        streaming: event.kind === 'assistant' ? '' : state.streaming,
        pending: answered ? state.pending.filter((call) => call.tool_call_id !== answered) : state.pending,
      };
    }
    case 'delta':
      return { ...state, streaming: state.streaming + action.text };
    case 'status': {
      const status = asRunStatus(action.status);
      return {
        ...state,
        status,
        error: status === 'error' ? (action.error ?? 'The run failed.') : null,
        // A run that stopped leaves no half-streamed text behind (it is stored if it counted).
        streaming: status === 'running' ? state.streaming : '',
        conversation: state.conversation ? { ...state.conversation, status } : state.conversation,
      };
    }
    case 'pending':
      return { ...state, pending: action.pending };
    case 'answered':
      return {
        ...state,
        pending: state.pending.filter((call) => call.tool_call_id !== action.toolCallId),
        answered: { ...state.answered, [action.toolCallId]: action.answer },
      };
    case 'user-sent':
      // Shown as running at once — unless the stream already brought the run's own events
      // (a fast run can finish before the POST answers): then its statuses are the truth.
      if (state.lastSeq > action.sinceSeq) return state;
      return { ...state, status: 'running', error: null };
  }
}

/** One line of the transcript: a stored event, or a tool call paired with its result. */
export type TranscriptItem =
  | { kind: 'message'; event: StoredEvent }
  | { kind: 'tool'; call: ToolCallEvent; result: ToolResultEvent | null; id: string; name: string; args: unknown };

/** Pairs each tool_call with its tool_result (by call id), keeping the order of the calls. */
export function transcript(events: StoredEvent[]): TranscriptItem[] {
  const results = new Map<string, ToolResultEvent>();
  for (const event of events) {
    if (event.kind === 'tool_result') results.set(event.tool_call_id, event);
  }
  const paired = new Set<string>();
  const items: TranscriptItem[] = [];
  for (const event of events) {
    if (event.kind === 'tool_call') {
      const result = results.get(event.id) ?? null;
      if (result) paired.add(event.id);
      items.push({ kind: 'tool', call: event, result, id: event.id, name: event.name, args: event.arguments });
    } else if (event.kind === 'tool_result') {
      if (!paired.has(event.tool_call_id)) items.push({ kind: 'message', event });
    } else {
      items.push({ kind: 'message', event });
    }
  }
  return items;
}
