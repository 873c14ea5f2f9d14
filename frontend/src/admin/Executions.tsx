// The tool execution log of an agent, with filters (tool, status, category, session,
// conversation) and the latest failures of what is chosen, and the last days' statistics per tool.
import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { api, type ErrorCategory, type Execution, type ExecutionFilter, type Stats } from '../api/client';
import { keys, useSessions, useTools } from '../api/queries';
import { when } from './History';
import { Stat, pretty } from './parts';

function median(values: number[]): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Per-tool figures over the window: the server's counts, medians and categories from the log. */
export function toolFigures(stats: Stats, log: Execution[]) {
  return stats.by_tool.map((row) => {
    const runs = log.filter((execution) => execution.tool_name === row.tool);
    const categories = new Map<string, number>();
    for (const run of runs) if (!run.success) categories.set(run.error_category ?? 'error', (categories.get(run.error_category ?? 'error') ?? 0) + 1);
    return {
      tool: row.tool,
      calls: row.calls,
      successRate: row.calls ? (row.calls - row.failures) / row.calls : 0,
      medianMs: median(runs.map((run) => run.duration_us / 1000)),
      categories: [...categories.entries()].sort((a, b) => b[1] - a[1]),
    };
  });
}

export function StatsCard({ agent }: { agent: string }) {
  const query = useQuery({
    queryKey: keys.stats(agent),
    queryFn: async () => {
      const [figures, rows] = await Promise.all([api.stats(agent, 7), api.executions(agent, { limit: 1000 })]);
      const since = Date.now() - 7 * 86_400_000;
      return { stats: figures, log: rows.filter((row) => new Date(row.created_at).getTime() >= since) };
    },
  });
  const stats = query.data?.stats ?? null;
  const log = query.data?.log ?? [];
  const error = query.error?.message ?? null;
  if (error) return <div className="alert alert-danger">{error}</div>;
  if (!stats) return <div className="loading-line">Loading statistics…</div>;
  return (
    <section className="admin-card" aria-label="Last 7 days">
      <h2>Last 7 days</h2>
      <div className="stat-row">
        <Stat value={stats.total} label="calls" />
        <Stat value={`${stats.total ? Math.round((stats.successful / stats.total) * 100) : 0}%`} label="succeeded" />
        <Stat value={stats.failed} label="failed" />
        <Stat value={`${stats.avg_duration_ms.toFixed(1)} ms`} label="mean duration" />
      </div>
      <div className="table-wrap">
        <table className="data-table plain">
          <thead>
            <tr>
              <th>Tool</th>
              <th>Calls</th>
              <th>Success</th>
              <th>Median</th>
              <th>Error categories</th>
            </tr>
          </thead>
          <tbody>
            {toolFigures(stats, log).map((row) => (
              <tr key={row.tool}>
                <td>
                  <code>{row.tool}</code>
                </td>
                <td>{row.calls}</td>
                <td>{Math.round(row.successRate * 100)}%</td>
                <td>{row.medianMs === null ? '–' : `${row.medianMs.toFixed(1)} ms`}</td>
                <td>{row.categories.map(([category, count]) => `${category} ×${count}`).join(', ') || '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

// Every error category of the server's closed set (`ErrorCategory` in the OpenAPI document). A
// record over the generated type: a category added on the server fails the typecheck here until
// it is listed, so the filter cannot drift from what is stored.
const CATEGORIES: Record<ErrorCategory, true> = {
  unknown_tool: true, invalid_arguments: true, denied: true, withheld: true, not_found: true, rejected: true,
  limit: true, rate_limited: true, not_configured: true, syntax: true, runtime: true, timeout: true, memory: true,
  output_too_large: true, network: true, cancelled: true, interrupted: true, failed: true, dismissed: true, internal: true,
};
const ERROR_CATEGORIES = Object.keys(CATEGORIES) as ErrorCategory[];

export function Executions({ agent }: { agent: string }) {
  const [filter, setFilter] = useState<ExecutionFilter>({});
  // Under the stats' key: the page's figures, its last failures and its filtered log refresh together.
  // The latest failures follow the conversation or session chosen below.
  const { conversation_id, session_id } = filter;
  const failuresQuery = useQuery({
    queryKey: [...keys.stats(agent), 'failures', conversation_id, session_id],
    queryFn: () => api.executions(agent, { success: false, limit: 5, conversation_id, session_id }),
  });
  const rowsQuery = useQuery({ queryKey: [...keys.stats(agent), 'log', filter], queryFn: () => api.executions(agent, { ...filter, limit: 200 }) });
  const rows: Execution[] | null = rowsQuery.data ?? null;
  const failures: Execution[] = failuresQuery.data ?? [];
  const toolList = useTools(agent).data;
  const tools = useMemo(() => (toolList ?? []).map((tool) => tool.name).sort(), [toolList]);
  const sessionsQuery = useSessions(agent);
  const sessions = sessionsQuery.data ?? [];
  const error = failuresQuery.error?.message ?? rowsQuery.error?.message ?? sessionsQuery.error?.message ?? null;
  // The code of the version that ran (calls recorded before versions were: the newest).
  const codeOf = async (execution: Execution): Promise<FailureCode | null> => {
    const versions = await api.agentToolVersions(agent, execution.tool_name).catch(() => []);
    const ran = execution.tool_version == null ? undefined : versions.find((entry) => entry.version === execution.tool_version);
    const shown = ran ?? [...versions].sort((a, b) => b.version - a.version)[0];
    const code = (shown?.content as { code?: string } | undefined)?.code;
    return shown && code != null ? { code, version: shown.version, ran: ran !== undefined } : null;
  };
  return (
    <>
      <StatsCard agent={agent} />
      <section className="admin-card" aria-label="Latest failures">
        <h2>Latest failures</h2>
        {!failures.length && <p className="muted small">No failed tool calls.</p>}
        {failures.map((execution) => (
          <Failure key={execution.id} execution={execution} codeOf={codeOf} />
        ))}
      </section>
      <section className="admin-card" aria-label="Execution log">
        <h2>Execution log</h2>
        <div className="filters">
          <select aria-label="Tool" value={filter.tool ?? ''} onChange={(event) => setFilter({ ...filter, tool: event.target.value || undefined })}>
            <option value="">All tools</option>
            {tools.map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
          <select
            aria-label="Status"
            value={filter.success === undefined ? '' : String(filter.success)}
            onChange={(event) => setFilter({ ...filter, success: event.target.value === '' ? undefined : event.target.value === 'true' })}
          >
            <option value="">Any status</option>
            <option value="true">Succeeded</option>
            <option value="false">Failed</option>
          </select>
          <select
            aria-label="Session"
            value={filter.session_id ?? ''}
            onChange={(event) => setFilter({ ...filter, session_id: event.target.value === '' ? undefined : Number(event.target.value) })}
          >
            <option value="">Any session</option>
            {sessions.map((session) => (
              <option key={session.id} value={session.id}>
                {session.name}
              </option>
            ))}
          </select>
          <input
            aria-label="Conversation"
            placeholder="Conversation id"
            value={filter.conversation_id ?? ''}
            onChange={(event) => setFilter({ ...filter, conversation_id: event.target.value.trim() || undefined })}
          />
          <select
            aria-label="Error category"
            value={filter.error_category ?? ''}
            onChange={(event) => setFilter({ ...filter, error_category: (event.target.value || undefined) as ErrorCategory | undefined })}
          >
            <option value="">Any category</option>
            {ERROR_CATEGORIES.map((category) => (
              <option key={category} value={category}>
                {category}
              </option>
            ))}
          </select>
        </div>
        {error && <div className="alert alert-danger">{error}</div>}
        {!rows ? (
          <div className="loading-line">Loading…</div>
        ) : !rows.length ? (
          <p className="muted small">No executions match.</p>
        ) : (
          <div className="table-wrap">
            <table className="data-table plain" aria-label="Executions">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Tool</th>
                  <th>Caller</th>
                  <th>Result</th>
                  <th>ms</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((row) => (
                  <tr key={row.id}>
                    <td>{when(row.created_at)}</td>
                    <td>
                      <code>{row.tool_name}</code>
                      {row.outside_origin && (
                        <span className="tool-origin" title="Its result is content from outside: instructions in it are not the person's.">
                          from {row.outside_origin}
                        </span>
                      )}
                    </td>
                    <td>{row.caller}</td>
                    <td className={row.success ? 'ok' : 'failed'}>{row.success ? 'ok' : (row.error_category ?? 'error')}</td>
                    <td>{(row.duration_us / 1000).toFixed(1)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}

interface FailureCode {
  code: string;
  version: number;
  /** Whether this is the version the failed call ran, or only the newest one. */
  ran: boolean;
}

function Failure({ execution, codeOf }: { execution: Execution; codeOf: (execution: Execution) => Promise<FailureCode | null> }) {
  const [code, setCode] = useState<FailureCode | null | undefined>(undefined);
  return (
    <details className="failure" onToggle={(event) => (event.currentTarget.open && code === undefined ? void codeOf(execution).then(setCode) : undefined)}>
      <summary>
        <code>{execution.tool_name}</code> <span className="pill pill-danger">{execution.error_category ?? 'error'}</span> <span className="muted small">{when(execution.created_at)}</span>
      </summary>
      <div className="sub-label">Error</div>
      <pre className="code failure-error">{execution.error}</pre>
      <div className="sub-label">Arguments</div>
      <pre className="code">{pretty(execution.args)}</pre>
      {code !== undefined && code !== null && (
        <>
          <div className="sub-label">{code.ran ? `Code of v${code.version}, which ran` : `Code of v${code.version}, the newest (the call predates version records)`}</div>
          <pre className="code failure-code">{code.code}</pre>
        </>
      )}
    </details>
  );
}
