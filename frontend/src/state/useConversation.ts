// Loads a conversation and follows its SSE stream, reconnecting with `?after=<last seq>` so
// a dropped connection (or a server that ended a lagging stream) loses nothing. What the stream
// says goes into the query cache too (liveCache.ts): the conversation's cached detail gets each
// event, status and waiting call, and every cached conversation list the new status, so a page
// that shows them is current without asking the server again.
import { useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useReducer, useRef } from 'react';
import { api, type CommandReply, type ConversationDetail, type NewSession, type StoredEvent } from '../api/client';
import { keys } from '../api/queries';
import { cacheEvent, cachePending, cacheStatus } from './liveCache';
import { conversationReducer, initialConversationState, type ConversationState } from './conversation';

const PAUSING_TOOLS = new Set(['render_and_wait', 'render_blocks', 'ask_user']);

export interface ConversationHandle {
  state: ConversationState;
  /** Resolves to the new session when the text was `/newsession [name]`, to the answer of another
   * command (`/codestats`, …), or to null when a run started. */
  send: (text: string) => Promise<NewSession | CommandReply | null>;
  cancel: () => Promise<void>;
  answer: (toolCallId: string, answer: unknown) => Promise<void>;
  reload: () => void;
  /** A problem reaching the stream or loading (not a run error). */
  connection: 'connecting' | 'live' | 'retrying';
}

export function useConversation(id: string): ConversationHandle & { loadError: string | null } {
  const [state, dispatch] = useReducer(conversationReducer, initialConversationState);
  const lastSeq = useRef(0);
  lastSeq.current = state.lastSeq;
  const [connection, setConnection] = useReducerState<'connecting' | 'live' | 'retrying'>('connecting');
  const [loadError, setLoadError] = useReducerState<string | null>(null);
  const [generation, bump] = useReducer((n: number) => n + 1, 0);
  const client = useQueryClient();

  const refreshPending = useCallback(async () => {
    try {
      const detail = await api.conversation(id);
      dispatch({ type: 'pending', pending: detail.pending });
      cachePending(client, id, detail.pending);
    } catch {
      /* the stream will tell us again */
    }
  }, [id, client]);

  useEffect(() => {
    let closed = false;
    let source: EventSource | null = null;
    let retryTimer: ReturnType<typeof setTimeout> | undefined;
    let attempts = 0;

    const open = () => {
      if (closed) return;
      source = new EventSource(api.streamUrl(id, lastSeq.current));
      source.addEventListener('open', () => {
        setConnection('live');
      });
      source.addEventListener('event', (message) => {
        attempts = 0;
        const event = JSON.parse((message as MessageEvent<string>).data) as StoredEvent;
        dispatch({ type: 'event', event });
        cacheEvent(client, id, event);
        if (event.kind === 'tool_call' && PAUSING_TOOLS.has(event.name)) void refreshPending();
      });
      source.addEventListener('delta', (message) => {
        const { text } = JSON.parse((message as MessageEvent<string>).data) as { text: string };
        dispatch({ type: 'delta', text });
      });
      source.addEventListener('status', (message) => {
        const { status, error } = JSON.parse((message as MessageEvent<string>).data) as { status: string; error?: string | null };
        dispatch({ type: 'status', status, error });
        cacheStatus(client, id, status as ConversationDetail['conversation']['status']);
        if (status === 'waiting') void refreshPending();
      });
      source.addEventListener('error', () => {
        // Reconnect ourselves, so the URL carries the newest seq.
        source?.close();
        if (closed) return;
        attempts += 1;
        // The server ends a stream that fell behind; only a repeated failure is worth showing.
        if (attempts > 1) setConnection('retrying');
        retryTimer = setTimeout(open, Math.min(10_000, 500 * 2 ** Math.min(attempts, 5)));
      });
    };

    setConnection('connecting');
    setLoadError(null);
    // A conversation seen before shows at once from the cache; the server's answer follows.
    const cached = client.getQueryData<ConversationDetail>(keys.conversation(id));
    if (cached) dispatch({ type: 'loaded', detail: cached });
    client
      .fetchQuery({ queryKey: keys.conversation(id), queryFn: () => api.conversation(id), staleTime: 0 })
      .then((detail) => {
        if (closed) return;
        dispatch({ type: 'loaded', detail });
        lastSeq.current = Math.max(lastSeq.current, ...detail.events.map((event) => event.seq));
        open();
      })
      .catch((error: Error) => {
        if (!closed) setLoadError(error.message);
      });
    return () => {
      closed = true;
      clearTimeout(retryTimer);
      source?.close();
    };
  }, [id, generation, refreshPending, setConnection, setLoadError, client]);

  const send = useCallback(
    async (text: string) => {
      const sinceSeq = lastSeq.current;
      const reply = await api.postMessage(id, text);
      if ('conversation_id' in reply || 'reply' in reply) return reply;
      dispatch({ type: 'user-sent', sinceSeq });
      return null;
    },
    [id],
  );
  const cancel = useCallback(async () => {
    await api.cancel(id);
  }, [id]);
  const answer = useCallback(
    async (toolCallId: string, value: unknown) => {
      await api.answerPending(id, toolCallId, value);
      dispatch({ type: 'answered', toolCallId, answer: value });
    },
    [id],
  );
  return { state, send, cancel, answer, reload: bump, connection, loadError };
}

/** useState with a stable setter type, kept local to avoid re-render churn in effects. */
function useReducerState<T>(initial: T): [T, (value: T) => void] {
  const [value, set] = useReducer((_: T, next: T) => next, initial);
  return [value, set];
}
