import { fireEvent, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Memory } from '../api/client';
import { Memories } from './Memory';
import { renderPage } from '../test/render';

function memory(fields: Partial<Memory>): Memory {
  return {
    id: 1,
    layer: 'long',
    category: 'preference',
    certainty: null,
    content: 'Prefers tea',
    session_id: null,
    conversation_id: 'c1',
    author: 'agent',
    created_at: '2026-11-24T00:00:00.000Z',
    updated_at: '2026-11-24T00:00:00.000Z',
    expires_at: null,
    archived_at: null,
    archived_reason: null,
    relevance: null,
    ...fields,
  };
}

/** A fetch answering the memory API from a small in-memory list, recording each call. */
function fakeApi(initial: Memory[]) {
  let memories = initial;
  const calls: { method: string; path: string; search: string; body: unknown }[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = new URL(String(input), 'http://wright.test');
      const method = init?.method ?? 'GET';
      const body = init?.body ? JSON.parse(String(init.body)) : undefined;
      calls.push({ method, path: url.pathname, search: url.search, body });
      const id = Number(url.pathname.split('/')[5]);
      let answer: unknown;
      if (method === 'GET' && url.pathname.endsWith('/history')) {
        answer = [{ id: 1, action: 'store', author: 'agent', conversation_id: 'c1', layer: 'long', category: null, certainty: null, content: 'Prefers tea', expires_at: null, created_at: '2026-11-24T00:00:00.000Z' }];
      } else if (method === 'GET') {
        const archived = url.searchParams.get('archived') === 'true';
        answer = memories.filter((item) => (archived ? item.archived_at : !item.archived_at && item.layer === url.searchParams.get('layer')));
      } else {
        memories = memories.map((item) => {
          if (item.id !== id) return item;
          if (url.pathname.endsWith('/forget')) return { ...item, archived_at: '2026-11-25T00:00:00.000Z', archived_reason: 'forget' as const };
          if (url.pathname.endsWith('/restore')) return { ...item, archived_at: null, archived_reason: null };
          return { ...item, ...(body as object), updated_at: '2026-11-26T00:00:00.000Z' };
        });
        answer = memories.find((item) => item.id === id);
      }
      return new Response(JSON.stringify(answer), { status: 200 });
    }),
  );
  return calls;
}

afterEach(() => vi.unstubAllGlobals());

describe('memory page', () => {
  it('lists by layer, edits, forgets only after confirming, and restores from the archive', async () => {
    const calls = fakeApi([memory({}), memory({ id: 2, layer: 'mid', category: 'goal', content: 'Learn Rust' })]);
    renderPage(<Memories agent="default" />);
    await screen.findByText('Prefers tea');
    expect(screen.queryByText('Learn Rust')).toBeNull();
    fireEvent.click(screen.getByRole('tab', { name: 'Mid-term' }));
    await screen.findByText('Learn Rust');
    fireEvent.click(screen.getByRole('tab', { name: 'Long-term' }));
    await screen.findByText('Prefers tea');

    fireEvent.click(screen.getByRole('button', { name: 'Edit' }));
    fireEvent.change(screen.getByLabelText('Memory text'), { target: { value: 'Prefers green tea' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save' }));
    // Saved: the editor closes (its textarea holds the same words) and the list shows the new text.
    await waitFor(() => expect(screen.queryByLabelText('Memory text')).toBeNull());
    await screen.findByText('Prefers green tea');
    expect(calls.find((call) => call.method === 'PATCH')).toMatchObject({ path: '/api/agents/default/memories/1', body: { content: 'Prefers green tea' } });

    fireEvent.click(screen.getByRole('button', { name: 'Forget' }));
    expect(calls.some((call) => call.path.endsWith('/forget'))).toBe(false);
    fireEvent.click(screen.getByRole('button', { name: 'Forget' }));
    await waitFor(() => expect(screen.queryByText('Prefers green tea')).toBeNull());

    fireEvent.click(screen.getByRole('tab', { name: 'Archived' }));
    await screen.findByText('forgotten');
    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    await screen.findByText(/agent · .* · conversation c1/);
    fireEvent.click(screen.getByRole('button', { name: 'Restore' }));
    await waitFor(() => expect(calls.some((call) => call.path.endsWith('/1/restore'))).toBe(true));
    await waitFor(() => expect(screen.queryByText('Prefers green tea')).toBeNull());
  });

  it('searches with the words typed', async () => {
    const calls = fakeApi([memory({})]);
    renderPage(<Memories agent="default" />);
    await screen.findByText('Prefers tea');
    fireEvent.change(screen.getByLabelText('Search memories'), { target: { value: 'tea' } });
    fireEvent.click(screen.getByRole('button', { name: 'Search' }));
    await waitFor(() => expect(calls.some((call) => call.search.includes('query=tea'))).toBe(true));
  });
});
