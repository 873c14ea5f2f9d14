// What a conversation's live stream says, written into the query cache: the conversation's
// detail (keys.conversation) gets each new event once, its status and its waiting calls; every
// cached conversation list (keys.conversations) gets the conversation's new status. Pages that
// read these keys — the sidebar's list, a revisit of the conversation — are current without a
// request; what the stream cannot say (the list's order, a new title) is still refetched by
// invalidation.
import type { QueryClient } from '@tanstack/react-query';
import type { Conversation, ConversationDetail, ConversationStatus, Pending, StoredEvent } from '../api/client';
import { keys } from '../api/queries';

export function cacheEvent(client: QueryClient, id: string, event: StoredEvent): void {
  client.setQueryData<ConversationDetail>(keys.conversation(id), (detail) =>
    detail && !detail.events.some((known) => known.seq === event.seq) ? { ...detail, events: [...detail.events, event].sort((a, b) => a.seq - b.seq) } : detail,
  );
}

export function cacheStatus(client: QueryClient, id: string, status: ConversationStatus): void {
  client.setQueryData<ConversationDetail>(keys.conversation(id), (detail) => (detail ? { ...detail, conversation: { ...detail.conversation, status } } : detail));
  client.setQueriesData<Conversation[]>({ queryKey: ['conversations'] }, (list) => list?.map((conversation) => (conversation.id === id ? { ...conversation, status } : conversation)));
}

export function cachePending(client: QueryClient, id: string, pending: Pending[]): void {
  client.setQueryData<ConversationDetail>(keys.conversation(id), (detail) => (detail ? { ...detail, pending } : detail));
}
