import { QueryClient } from '@tanstack/react-query';
import { describe, expect, it } from 'vitest';
import type { Conversation, ConversationDetail, StoredEvent } from '../api/client';
import { keys } from '../api/queries';
import { cacheEvent, cachePending, cacheStatus } from './liveCache';

const at = '2026-11-27T10:00:00Z';
const conversation = (id: string): Conversation => ({ id, agent_id: 'default', title: id, status: 'idle', created_at: at, updated_at: at });
const user = (seq: number, text: string): StoredEvent => ({ seq, kind: 'user', content: text, text, created_at: at });

describe('the live stream writes into the query cache', () => {
  it('adds each event once and in order, and sets the status in the detail and in every list', () => {
    const client = new QueryClient();
    client.setQueryData<ConversationDetail>(keys.conversation('c1'), { conversation: conversation('c1'), events: [user(1, 'hi')], pending: [] });
    client.setQueryData<Conversation[]>(keys.conversations('default'), [conversation('c1'), conversation('c2')]);
    cacheEvent(client, 'c1', user(3, 'third'));
    cacheEvent(client, 'c1', user(2, 'second'));
    cacheEvent(client, 'c1', user(3, 'third'));
    cacheStatus(client, 'c1', 'waiting');
    const detail = client.getQueryData<ConversationDetail>(keys.conversation('c1'))!;
    expect(detail.events.map((event) => event.seq)).toEqual([1, 2, 3]);
    expect(detail.conversation.status).toBe('waiting');
    expect(client.getQueryData<Conversation[]>(keys.conversations('default'))!.map((entry) => entry.status)).toEqual(['waiting', 'idle']);
    cachePending(client, 'c1', [{ tool_call_id: 'call-1', tool_name: 'ask_user', kind: 'question', args: {}, created_at: at }]);
    expect(client.getQueryData<ConversationDetail>(keys.conversation('c1'))!.pending.map((call) => call.tool_call_id)).toEqual(['call-1']);
  });

  it('leaves alone a conversation nobody has loaded', () => {
    const client = new QueryClient();
    cacheEvent(client, 'c9', user(1, 'hi'));
    cacheStatus(client, 'c9', 'running');
    expect(client.getQueryData(keys.conversation('c9'))).toBeUndefined();
  });
});
