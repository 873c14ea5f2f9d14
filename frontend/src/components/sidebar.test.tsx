import { describe, expect, it } from 'vitest';
import type { Conversation, Session } from '../api/client';
import { groupBySession } from './Sidebar';

const conversation = (id: string): Conversation => ({ id, agent_id: 'default', title: id, status: 'idle', created_at: '', updated_at: '' }) as Conversation;
const session = (id: number, name: string, conversation_ids: string[], ended: boolean): Session => ({
  id,
  name,
  started_by: 'schedule',
  started_at: '2026-11-24T00:00:00.000Z',
  ended_at: ended ? '2026-11-25T00:00:00.000Z' : null,
  conversation_ids,
});

describe('conversation list by session', () => {
  it('groups newest session first, keeps the open one even when empty, and puts older conversations under Earlier', () => {
    const groups = groupBySession(
      [conversation('b'), conversation('old'), conversation('a')],
      [session(3, 'Taxes', [], false), session(2, '2026-11-24', ['a', 'b'], true), session(1, '2026-11-23', [], true)],
    );
    expect(groups.map((group) => [group.label, group.open, group.items.map((item) => item.id)])).toEqual([
      ['Taxes', true, []],
      ['2026-11-24', false, ['b', 'a']],
      ['Earlier', false, ['old']],
    ]);
  });
});
