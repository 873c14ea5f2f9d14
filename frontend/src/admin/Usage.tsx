// Admin → Usage: what model requests used and cost, by day, agent, model or caller, since a
// time — a chart and a table from `GET /api/usage`, and every request as CSV. Budgets and
// prices are set on the Settings page (admin/Budgets.tsx).
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type UsageGrouping } from '../api/client';
import { Chart } from '../blocks/Chart';
import { dollars } from '../components/UsageMeter';
import { ErrorAlert, Stat } from './parts';

const GROUPINGS: { id: UsageGrouping; label: string }[] = [
  { id: 'day', label: 'Day' },
  { id: 'agent', label: 'Agent' },
  { id: 'model', label: 'Model' },
  { id: 'caller', label: 'Caller' },
];

const PERIODS: { since: string | undefined; label: string }[] = [
  { since: undefined, label: 'This month' },
  { since: '7d', label: 'Last 7 days' },
  { since: '24h', label: 'Last 24 hours' },
  { since: '90d', label: 'Last 90 days' },
];

export function Usage() {
  const [by, setBy] = useState<UsageGrouping>('day');
  const [period, setPeriod] = useState(0);
  const since = PERIODS[period]!.since;
  const report = useQuery({ queryKey: ['usage', by, since ?? ''], queryFn: () => api.usage(by, since) });
  const data = report.data;
  return (
    <section className="card" aria-label="Usage">
      <h2>Usage</h2>
      <p className="muted">
        Every model request of every agent — runs, compaction, schedules, embeddings — with its tokens and its cost at the price of
        the moment. Requests whose server reported no usage are estimated.
      </p>
      <div className="usage-chart-controls">
        <div className="usage-groupings" role="group" aria-label="Group by">
          {GROUPINGS.map((grouping) => (
            <button key={grouping.id} type="button" className={`button ${by === grouping.id ? 'primary' : ''}`} aria-pressed={by === grouping.id} onClick={() => setBy(grouping.id)}>
              {grouping.label}
            </button>
          ))}
        </div>
        <select aria-label="Period" value={period} onChange={(event) => setPeriod(Number(event.target.value))}>
          {PERIODS.map((choice, index) => (
            <option key={choice.label} value={index}>
              {choice.label}
            </option>
          ))}
        </select>
        <a className="button" href={api.usageExportUrl(since)} download="wright-usage.csv">
          Export CSV
        </a>
      </div>
      <ErrorAlert error={report.error ? (report.error as Error).message : null} />
      {!data ? (
        <div className="loading-line">Loading…</div>
      ) : (
        <>
          <div className="stats">
            <Stat value={dollars(data.totals.cost_usd)} label="cost" />
            <Stat value={data.totals.requests} label="requests" />
            <Stat value={data.totals.prompt_tokens} label="prompt tokens" />
            <Stat value={data.totals.cached_prompt_tokens} label="cached" />
            <Stat value={data.totals.completion_tokens} label="completion tokens" />
          </div>
          {data.rows.length === 0 ? (
            <p className="muted">No model requests in this period.</p>
          ) : (
            <>
              <Chart
                chartType="bar"
                title={`Cost (USD) by ${by}`}
                data={{ labels: data.rows.map((row) => row.key), series: [{ name: 'cost', data: data.rows.map((row) => row.cost_usd) }] }}
              />
              <table className="usage-table" aria-label={`Usage by ${by}`}>
                <thead>
                  <tr>
                    <th>{GROUPINGS.find((grouping) => grouping.id === by)!.label}</th>
                    <th>Requests</th>
                    <th>Prompt</th>
                    <th>Cached</th>
                    <th>Completion</th>
                    <th>Cost</th>
                  </tr>
                </thead>
                <tbody>
                  {data.rows.map((row) => (
                    <tr key={row.key}>
                      <td>{row.key}</td>
                      <td>
                        {row.requests}
                        {row.estimated_requests > 0 && <span className="muted"> ({row.estimated_requests} estimated)</span>}
                      </td>
                      <td>{row.prompt_tokens}</td>
                      <td>{row.cached_prompt_tokens}</td>
                      <td>{row.completion_tokens}</td>
                      <td>{dollars(row.cost_usd)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </>
      )}
    </section>
  );
}
