import { describe, expect, it } from 'vitest';
import type { ConversationDetail, ConversationStatus, StoredEvent } from '../api/client';
import { conversationReducer, initialConversationState, transcript, type ConversationAction, type ConversationState } from './conversation';

const at = '2026-11-22T10:00:00Z';
const user = (seq: number, text: string, component?: string): StoredEvent => ({ seq, content: text, created_at: at, kind: 'user', text, ...(component ? { component } : {}) });
const assistant = (seq: number, text: string): StoredEvent => ({ seq, content: text, created_at: at, kind: 'assistant', text, provider: null });
const call = (seq: number, id: string, name: string, args: unknown = {}): StoredEvent => ({ seq, content: '', created_at: at, kind: 'tool_call', id, name, arguments: args, provider: null });
const result = (seq: number, toolCallId: string, name: string, output: unknown, success = true, content = ''): StoredEvent => ({
  seq,
  content,
  created_at: at,
  kind: 'tool_result',
  tool_call_id: toolCallId,
  name,
  output,
  success,
});
const detail = (events: StoredEvent[], status: ConversationStatus = 'idle', pending: ConversationDetail['pending'] = []): ConversationDetail => ({
  conversation: { id: 'c1', agent_id: 'default', title: 'T', status, created_at: at, updated_at: at },
  events,
  pending,
});
const run = (actions: ConversationAction[], state: ConversationState = initialConversationState) => actions.reduce(conversationReducer, state);

describe('conversation reducer', () => {
  it('ignores events replayed after a reconnect', () => {
    const state = run([
      { type: 'loaded', detail: detail([user(1, 'hi'), assistant(2, 'hello')]) },
      { type: 'event', event: assistant(2, 'hello') },
      { type: 'event', event: user(3, 'again') },
      { type: 'event', event: user(3, 'again') },
      { type: 'event', event: user(1, 'hi') },
    ]);
    expect(state.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(state.lastSeq).toBe(3);
  });

  it('keeps seq order when an older event arrives late', () => {
    const state = run([{ type: 'event', event: assistant(2, 'b') }, { type: 'event', event: user(1, 'a') }]);
    expect(state.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(state.lastSeq).toBe(2);
  });

  it('accumulates deltas and replaces them with the stored assistant event', () => {
    let state = run([
      { type: 'loaded', detail: detail([user(1, 'hi')]) },
      { type: 'status', status: 'running' },
      { type: 'delta', text: 'Hel' },
      { type: 'delta', text: 'lo' },
    ]);
    expect(state.streaming).toBe('Hello');
    state = run([{ type: 'event', event: assistant(2, 'Hello') }], state);
    expect(state.streaming).toBe('');
    const last = state.events.at(-1)!;
    expect(last.kind === 'assistant' && last.text).toBe('Hello');
  });

  it('keeps streaming text across a tool call event, drops it when the run stops', () => {
    let state = run([{ type: 'status', status: 'running' }, { type: 'delta', text: 'Let me check' }, { type: 'event', event: call(1, 'a', 'x') }]);
    expect(state.streaming).toBe('Let me check');
    state = run([{ type: 'status', status: 'idle' }], state);
    expect(state.streaming).toBe('');
    expect(state.status).toBe('idle');
  });

  it('tracks status and the run error', () => {
    let state = run([{ type: 'loaded', detail: detail([], 'running') }]);
    expect(state.status).toBe('running');
    state = run([{ type: 'status', status: 'error', error: 'provider said 429' }], state);
    expect(state.status).toBe('error');
    expect(state.error).toBe('provider said 429');
    expect(state.conversation!.status).toBe('error');
    state = run([{ type: 'user-sent', sinceSeq: state.lastSeq }], state);
    expect(state.status).toBe('running');
    expect(state.error).toBeNull();
    expect(run([{ type: 'status', status: 'bogus' }]).status).toBe('idle');
  });

  it('a run that ended before its POST answered is not shown as running again', () => {
    // The stream brought the user message, the answer and idle before the POST returned.
    let state = run([{ type: 'loaded', detail: detail([], 'idle') }]);
    const sinceSeq = state.lastSeq;
    state = run([{ type: 'event', event: call(1, 'a', 'x') }, { type: 'status', status: 'idle' }, { type: 'user-sent', sinceSeq }], state);
    expect(state.status).toBe('idle');
  });

  it('drops a pending call once its result is stored', () => {
    const pending = [{ tool_call_id: 'q1', tool_name: 'ask_user', kind: 'question' as const, args: { question: '?' }, created_at: at }];
    let state = run([{ type: 'loaded', detail: detail([call(1, 'q1', 'ask_user')], 'waiting', pending) }]);
    expect(state.pending).toHaveLength(1);
    state = run([{ type: 'event', event: result(2, 'q1', 'ask_user', { answer: 'yes' }) }], state);
    expect(state.pending).toHaveLength(0);
  });
});

describe('transcript', () => {
  it('pairs each tool call with its result, in call order, even for parallel calls', () => {
    const items = transcript([
      user(1, 'go'),
      call(2, 'a', 'one', { x: 1 }),
      call(3, 'b', 'two'),
      result(4, 'b', 'two', 'B'),
      result(5, 'a', 'one', 'A', false),
      assistant(6, 'done'),
    ]);
    expect(items.map((item) => (item.kind === 'tool' ? `${item.name}:${String(item.result?.output)}` : item.event.kind))).toEqual(['user', 'one:A', 'two:B', 'assistant']);
  });

  it('keeps a result whose call is missing as its own line', () => {
    const items = transcript([result(1, 'z', 'x', 1, true, 'orphan')]);
    expect(items).toHaveLength(1);
    expect(items[0].kind).toBe('message');
  });

  it('pairs the cancelled results the server writes for calls a cancel cut short', () => {
    const cancelled = { error: 'the person cancelled the run before this call finished; it may not have taken effect', category: 'cancelled' };
    const items = transcript([
      call(1, 'a', 'slow'),
      call(2, 'b', 'fast'),
      result(3, 'a', 'slow', cancelled, false),
      result(4, 'b', 'fast', cancelled, false),
      { seq: 5, content: 'The run was cancelled.', created_at: at, kind: 'notice', type: 'cancelled' },
    ]);
    expect(items.map((item) => (item.kind === 'tool' ? `${item.id}:${item.result?.success}` : item.event.kind))).toEqual(['a:false', 'b:false', 'notice']);
  });
});
