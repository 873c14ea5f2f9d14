// The agent's schedules (made with its `schedule` tool): when each runs, in which time zone,
// its next time and what became of its last one (with a link to that run's conversation).
// Each can be paused — resumed, it counts from then on, so the times it slept through are
// neither run nor reported as missed — or deleted (it never runs again; its history stays).
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { keys } from '../api/queries';
import { api, type Schedule } from '../api/client';
import { navigate, routePath } from '../router';
import { ConfirmButtons, ErrorAlert } from './parts';
import { when } from './History';

const OUTCOMES: Record<string, string> = {
  started: 'running',
  finished: 'ran',
  failed: 'failed',
  missed: 'missed (Wright was not running)',
  skipped_limit: 'skipped (runs per day used up)',
  skipped_budget: 'skipped (a budget is spent)',
};

function timing(schedule: Schedule): string {
  return schedule.cron ? `cron ${schedule.cron}` : `once at ${schedule.run_at ? when(schedule.run_at) : '?'}`;
}

export function Schedules({ agent }: { agent: string }) {
  const client = useQueryClient();
  const query = useQuery({ queryKey: keys.schedules(agent), queryFn: () => api.schedules(agent, true) });
  const schedules = query.data ?? null;
  const [actionError, setError] = useState<string | null>(null);
  const error = actionError ?? query.error?.message ?? null;
  const [deleting, setDeleting] = useState<number | null>(null);
  const refresh = () => void client.invalidateQueries({ queryKey: keys.schedules(agent) });

  const act = async (action: () => Promise<Schedule>) => {
    setError(null);
    try {
      await action();
      setDeleting(null);
      refresh();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  if (!schedules) return error ? <ErrorAlert error={error} /> : <div className="loading-line">Loading…</div>;
  return (
    <section className="card" aria-label="Schedules">
      <h2>Schedules</h2>
      <p className="muted">
        Prompts the agent runs by itself, made with its <code>schedule</code> tool. At each time a run starts in a new
        conversation and its answer reaches you as a notification. A time missed while Wright was not running is reported,
        not run late (unless it is within the catch-up window).
      </p>
      <ErrorAlert error={error} />
      {schedules.length === 0 ? (
        <p className="muted">No schedules yet.</p>
      ) : (
        <table className="schedule-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>When</th>
              <th>Next</th>
              <th>Last</th>
              <th>Status</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {schedules.map((schedule) => {
              const live = schedule.status === 'active' || schedule.status === 'paused';
              const last = schedule.last_run;
              return (
                <tr key={schedule.id} aria-label={`Schedule ${schedule.name}`}>
                  <td>
                    <strong>{schedule.name}</strong>
                    <div className="muted small" title={schedule.prompt}>
                      {schedule.prompt.length > 80 ? `${schedule.prompt.slice(0, 80)}…` : schedule.prompt}
                    </div>
                  </td>
                  <td>
                    <code>{timing(schedule)}</code>
                    <div className="muted small">{schedule.time_zone}</div>
                  </td>
                  <td>{schedule.next_run_at ? when(schedule.next_run_at) : '—'}</td>
                  <td>
                    {last ? (
                      <>
                        {OUTCOMES[last.outcome] ?? last.outcome} {when(last.due_at)}
                        {last.conversation_id && (
                          <>
                            {' '}
                            <button type="button" className="button ghost small" onClick={() => navigate(routePath({ page: 'agent', agent, conversation: last.conversation_id! }))}>
                              open
                            </button>
                          </>
                        )}
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td>
                    <span className={`pill ${schedule.status === 'active' ? 'pill-success' : schedule.status === 'paused' ? 'pill-warning' : ''}`}>{schedule.status}</span>
                  </td>
                  <td>
                    {live && deleting !== schedule.id && (
                      <div className="card-actions">
                        <button type="button" className="button small" onClick={() => void act(() => api.setSchedulePaused(agent, schedule.id, schedule.status === 'active'))}>
                          {schedule.status === 'active' ? 'Pause' : 'Resume'}
                        </button>
                        <button type="button" className="button ghost small" onClick={() => setDeleting(schedule.id)}>
                          Delete
                        </button>
                      </div>
                    )}
                    {deleting === schedule.id && <ConfirmButtons label={`Delete ${schedule.name}`} onConfirm={() => void act(() => api.deleteSchedule(agent, schedule.id))} onCancel={() => setDeleting(null)} />}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
