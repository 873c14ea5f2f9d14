import { describe, expect, it } from 'vitest';
import type { ConversationDetail, StoredEvent } from '../api/client';
import { conversationReducer, initialConversationState, transcript, type ConversationAction, type ConversationState } from './conversation';

const at = '2026-11-22T10:00:00Z';
const event = (seq: number, kind: string, content = '', data_json: unknown = null): StoredEvent => ({ seq, kind, content, data_json, created_at: at });
const detail = (events: StoredEvent[], status = 'idle', pending: ConversationDetail['pending'] = []): ConversationDetail => ({
  conversation: { id: 'c1', agent_id: 'default', title: 'T', status, created_at: at, updated_at: at },
  events,
  pending,
});
const run = (actions: ConversationAction[], state: ConversationState = initialConversationState) => actions.reduce(conversationReducer, state);

describe('conversation reducer', () => {
  it('ignores events replayed after a reconnect', () => {
    const state = run([
      { type: 'loaded', detail: detail([event(1, 'user', 'hi'), event(2, 'assistant', 'hello')]) },
      { type: 'event', event: event(2, 'assistant', 'hello') },
      { type: 'event', event: event(3, 'user', 'again') },
      { type: 'event', event: event(3, 'user', 'again') },
      { type: 'event', event: event(1, 'user', 'hi') },
    ]);
    expect(state.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(state.lastSeq).toBe(3);
  });

  it('keeps seq order when an older event arrives late', () => {
    const state = run([{ type: 'event', event: event(2, 'assistant', 'b') }, { type: 'event', event: event(1, 'user', 'a') }]);
    expect(state.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(state.lastSeq).toBe(2);
  });

  it('accumulates deltas and replaces them with the stored assistant event', () => {
    let state = run([
      { type: 'loaded', detail: detail([event(1, 'user', 'hi')]) },
      { type: 'status', status: 'running' },
      { type: 'delta', text: 'Hel' },
      { type: 'delta', text: 'lo' },
    ]);
    expect(state.streaming).toBe('Hello');
    state = run([{ type: 'event', event: event(2, 'assistant', 'Hello') }], state);
    expect(state.streaming).toBe('');
    expect(state.events.at(-1)!.content).toBe('Hello');
  });

  it('keeps streaming text across a tool call event, drops it when the run stops', () => {
    let state = run([{ type: 'status', status: 'running' }, { type: 'delta', text: 'Let me check' }, { type: 'event', event: event(1, 'tool_call', '', { id: 'a', name: 'x', arguments: {} }) }]);
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
    state = run([{ type: 'user-sent' }], state);
    expect(state.status).toBe('running');
    expect(state.error).toBeNull();
    expect(run([{ type: 'status', status: 'bogus' }]).status).toBe('idle');
  });

  it('drops a pending call once its result is stored', () => {
    const pending = [{ tool_call_id: 'q1', tool_name: 'ask_user', args: { question: '?' }, created_at: at }];
    let state = run([{ type: 'loaded', detail: detail([event(1, 'tool_call', '', { id: 'q1', name: 'ask_user', arguments: {} })], 'waiting', pending) }]);
    expect(state.pending).toHaveLength(1);
    state = run([{ type: 'event', event: event(2, 'tool_result', '', { tool_call_id: 'q1', name: 'ask_user', output: { answer: 'yes' }, success: true }) }], state);
    expect(state.pending).toHaveLength(0);
  });
});

describe('transcript', () => {
  it('pairs each tool call with its result, in call order, even for parallel calls', () => {
    const items = transcript([
      event(1, 'user', 'go'),
      event(2, 'tool_call', '', { id: 'a', name: 'one', arguments: { x: 1 } }),
      event(3, 'tool_call', '', { id: 'b', name: 'two', arguments: {} }),
      event(4, 'tool_result', '', { tool_call_id: 'b', name: 'two', output: 'B', success: true }),
      event(5, 'tool_result', '', { tool_call_id: 'a', name: 'one', output: 'A', success: false }),
      event(6, 'assistant', 'done'),
    ]);
    expect(items.map((item) => (item.kind === 'tool' ? `${item.name}:${(item.result?.data_json as { output: string }).output}` : item.event.kind))).toEqual(['user', 'one:A', 'two:B', 'assistant']);
  });

  it('keeps a result whose call is missing as its own line', () => {
    const items = transcript([event(1, 'tool_result', 'orphan', { tool_call_id: 'z', name: 'x', output: 1, success: true })]);
    expect(items).toHaveLength(1);
    expect(items[0].kind).toBe('message');
  });
});
