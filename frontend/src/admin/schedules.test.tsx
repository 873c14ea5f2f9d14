import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Schedule } from '../api/client';
import { Schedules } from './Schedules';
import { renderPage } from '../test/render';

function schedule(fields: Partial<Schedule>): Schedule {
  return {
    id: 1,
    name: 'digest',
    prompt: 'Summarise my day',
    cron: '0 8 * * *',
    run_at: null,
    time_zone: 'Asia/Tokyo',
    status: 'active',
    next_run_at: '2026-11-24T23:00:00.000Z',
    created_by: 'agent',
    created_at: '2026-11-24T00:00:00.000Z',
    last_run: { id: 3, due_at: '2026-11-23T23:00:00.000Z', fired_at: '2026-11-23T23:00:00.000Z', outcome: 'missed', missed_count: 2, conversation_id: null },
    ...fields,
  };
}

/** A fetch answering the schedules API from an in-memory list, recording each call. */
function fakeApi(initial: Schedule[]) {
  let schedules = initial;
  const calls: { method: string; path: string; body: unknown }[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = new URL(String(input), 'http://wright.test');
      const method = init?.method ?? 'GET';
      const body = init?.body ? JSON.parse(String(init.body)) : undefined;
      calls.push({ method, path: url.pathname, body });
      const id = Number(url.pathname.split('/')[5]);
      if (method === 'GET') return new Response(JSON.stringify(schedules), { status: 200 });
      schedules = schedules.map((item) => {
        if (item.id !== id) return item;
        if (method === 'DELETE') return { ...item, status: 'cancelled' as const, next_run_at: null };
        return { ...item, status: (body as { paused: boolean }).paused ? ('paused' as const) : ('active' as const) };
      });
      return new Response(JSON.stringify(schedules.find((item) => item.id === id)), { status: 200 });
    }),
  );
  return calls;
}

afterEach(() => vi.unstubAllGlobals());

describe('schedules page', () => {
  it('lists schedules with their zone and last run, pauses, resumes, and deletes only after confirming', async () => {
    const calls = fakeApi([schedule({}), schedule({ id: 2, name: 'call', cron: null, run_at: '2026-11-25T07:30:00.000Z', status: 'done', next_run_at: null, last_run: null })]);
    renderPage(<Schedules agent="default" />);
    const row = await screen.findByRole('row', { name: 'Schedule digest' });
    expect(row.textContent).toContain('cron 0 8 * * *');
    expect(row.textContent).toContain('Asia/Tokyo');
    expect(row.textContent).toContain('missed (Wright was not running)');
    const done = screen.getByRole('row', { name: 'Schedule call' });
    expect(within(done).queryByRole('button', { name: 'Pause' })).toBeNull();

    fireEvent.click(within(row).getByRole('button', { name: 'Pause' }));
    await waitFor(() => expect(within(screen.getByRole('row', { name: 'Schedule digest' })).getByRole('button', { name: 'Resume' })).toBeTruthy());
    expect(calls.find((call) => call.method === 'PUT')).toMatchObject({ path: '/api/agents/default/schedules/1/paused', body: { paused: true } });

    fireEvent.click(within(screen.getByRole('row', { name: 'Schedule digest' })).getByRole('button', { name: 'Delete' }));
    expect(calls.some((call) => call.method === 'DELETE')).toBe(false);
    fireEvent.click(screen.getByRole('button', { name: 'Delete digest' }));
    await waitFor(() => expect(calls.some((call) => call.method === 'DELETE' && call.path === '/api/agents/default/schedules/1')).toBe(true));
    await waitFor(() => expect(screen.getByRole('row', { name: 'Schedule digest' }).textContent).toContain('cancelled'));
  });
});
