// The admin section, per agent: the system prompt and learned notes, the agent's tools and UI
// components (each with its version timeline, diffs and rollback), and the tool execution log
// with filters, the latest failures and the last 7 days' statistics; the agent's schedules
// (admin/Schedules.tsx: pause, resume, delete); and the installation's Settings (provider
// connections and models, admin/Settings.tsx; the MCP servers' states, admin/McpServers.tsx).
import { useCallback, useEffect, useMemo, useState } from 'react';
import { api, type AgentTool, type Schemas, type Tool, type ComponentDetail, type ComponentSummary, type DocumentKind, type DocumentView, type Execution, type ExecutionFilter, type Stats } from '../api/client';
import { UpdatePreview, type UpdatePreviewData } from '../admin/UpdatePreview';
import { History, when, type HistorySource } from '../admin/History';
import { ADMIN_SECTIONS } from './Sidebar';
import { componentsChanged } from '../frame/componentsChannel';
import { ConfirmButtons, ErrorAlert, Stat } from '../admin/parts';
import { Memories } from '../admin/Memory';
import { Settings } from '../admin/Settings';
import { Schedules } from '../admin/Schedules';
import { McpServers } from '../admin/McpServers';
import { Toolsets } from '../admin/Toolsets';

function pretty(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

function DocumentCard({ agent, kind }: { agent: string; kind: DocumentKind }) {
  const [doc, setDoc] = useState<DocumentView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = useCallback(() => {
    api.document(agent, kind).then(setDoc, (failure: Error) => setError(failure.message));
  }, [agent, kind]);
  useEffect(refresh, [refresh]);
  const source = useMemo<HistorySource>(
    () => ({
      versions: () => api.versions(agent, kind),
      diff: async (from, to) => (await api.documentDiff(agent, kind, from, to)).diff,
      rollback: (version, reason) => api.rollbackDocument(agent, kind, version, reason),
    }),
    [agent, kind],
  );
  const title = kind === 'system_prompt' ? 'System prompt' : 'Learned notes';
  const [draft, setDraft] = useState<string | null>(null);
  const [reason, setReason] = useState('');
  // Remounting the timeline after an edit reloads it with the new version.
  const [generation, setGeneration] = useState(0);
  const save = async () => {
    if (draft === null) return;
    try {
      await api.editDocument(agent, kind, { operation: 'replace', content: draft, reason: reason.trim() || null });
      setDraft(null);
      setReason('');
      setGeneration((value) => value + 1);
      refresh();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <section className="admin-card" aria-label={title}>
      <h2>
        {title} {doc && <span className="pill">v{doc.version}</span>}
      </h2>
      {error && <div className="alert alert-danger">{error}</div>}
      {draft === null ? (
        <>
          <pre className="tool-text doc-content" data-testid={`${kind}-content`}>
            {doc ? doc.content || '(empty)' : '…'}
          </pre>
          <div className="card-actions">
            <button type="button" className="button small" onClick={() => setDraft(doc?.content ?? '')} disabled={!doc}>
              Edit
            </button>
          </div>
        </>
      ) : (
        <form
          className="doc-edit"
          onSubmit={(event) => {
            event.preventDefault();
            void save();
          }}
        >
          <textarea aria-label={`${title} text`} value={draft} onChange={(event) => setDraft(event.target.value)} rows={Math.min(20, Math.max(4, draft.split('\n').length + 1))} />
          <div className="card-actions">
            <input aria-label="Edit reason" placeholder="Why this change? (optional)" value={reason} onChange={(event) => setReason(event.target.value)} />
            <button type="submit" className="button primary small" disabled={draft === doc?.content}>
              Save as a new version
            </button>
            <button type="button" className="button ghost small" onClick={() => setDraft(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <details className="history-details" open>
        <summary>History</summary>
        <History key={generation} title={title} source={source} onChanged={refresh} />
      </details>
    </section>
  );
}

function Provenance({ value }: { value: unknown }) {
  if (!value || typeof value !== 'object') return <span className="pill">written by the agent</span>;
  const origin = value as { listing?: string; version?: number; hash?: string };
  return (
    <span className="pill pill-accent" title={origin.hash}>
      market: {origin.listing} v{origin.version} · {origin.hash?.slice(0, 12)}
    </span>
  );
}

/** Name, version, enabled state and origin of a tool or component, with its description. */
function ArtifactHeading({ name, version, enabled, provenance, description }: { name: string; version: number; enabled: boolean; provenance: unknown; description: string }) {
  return (
    <>
      <h2>
        <code>{name}</code> <span className="pill">v{version}</span>
        <span className={`pill ${enabled ? 'pill-success' : 'pill-warning'}`}>{enabled ? 'enabled' : 'disabled'}</span>
        <Provenance value={provenance} />
      </h2>
      <p className="muted">{description}</p>
    </>
  );
}

/** Disable an enabled artifact, or open its review (the only way to enable it). */
function EnableToggle({ enabled, reviewing, onDisable, onReview }: { enabled: boolean; reviewing: boolean; onDisable: () => void; onReview: () => void }) {
  return enabled ? (
    <button type="button" className="button small" onClick={onDisable}>
      Disable
    </button>
  ) : (
    <button type="button" className="button small primary" onClick={onReview} disabled={reviewing}>
      Review and enable…
    </button>
  );
}

/** What an artifact runs (its schema and code), shown before a person enables it. */
function ReviewBeforeEnabling({ intro, schemaLabel, schema, code, name, onEnable, onCancel }: { intro: string; schemaLabel: string; schema: unknown; code: string; name: string; onEnable: () => void; onCancel: () => void }) {
  return (
    <div className="review" aria-label="Review before enabling">
      <p className="small">{intro}</p>
      <div className="sub-label">{schemaLabel}</div>
      <pre className="code">{pretty(schema)}</pre>
      <div className="sub-label">Code</div>
      <pre className="code review-code">{code}</pre>
      <ConfirmButtons label={`Enable ${name}`} onConfirm={onEnable} onCancel={onCancel} />
    </div>
  );
}

function ToolCard({ agent, tool, onChanged }: { agent: string; tool: AgentTool; onChanged: () => void }) {
  const [reviewing, setReviewing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [preview, setPreview] = useState<UpdatePreviewData | null>(null);
  const installed = Boolean(tool.provenance && typeof tool.provenance === 'object');
  const source = useMemo<HistorySource>(
    () => ({
      versions: () => api.agentToolVersions(agent, tool.name),
      diff: async (from, to) => (await api.agentToolDiff(agent, tool.name, from, to)).diff,
      rollback: (version, reason) => api.rollbackAgentTool(agent, tool.name, version, reason),
    }),
    [agent, tool.name],
  );
  const act = async (action: () => Promise<unknown>) => {
    try {
      setError(null);
      await action();
      setReviewing(false);
      setPreview(null);
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const checkUpdate = async () => {
    try {
      setError(null);
      setPreview(await api.updatePreview(agent, tool.name));
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <section className="admin-card tool-card" aria-label={`Tool ${tool.name}`}>
      <ArtifactHeading name={tool.name} version={tool.version} enabled={tool.enabled} provenance={tool.provenance} description={tool.description} />
      <ErrorAlert error={error} />
      <div className="card-actions">
        <EnableToggle enabled={tool.enabled} reviewing={reviewing} onDisable={() => void act(() => api.setAgentToolEnabled(agent, tool.name, false))} onReview={() => setReviewing(true)} />
        {installed && (
          <>
            <button type="button" className="button small" onClick={() => void checkUpdate()}>
              Check for update
            </button>
            <button type="button" className="button small ghost" onClick={() => void act(() => api.uninstallAgentTool(agent, tool.name))}>
              Uninstall
            </button>
          </>
        )}
      </div>
      {reviewing && (
        <ReviewBeforeEnabling
          intro="Read what this tool runs before you enable it."
          schemaLabel="Parameters"
          schema={tool.parameter_schema}
          code={tool.code}
          name={tool.name}
          onEnable={() => void act(() => api.setAgentToolEnabled(agent, tool.name, true))}
          onCancel={() => setReviewing(false)}
        />
      )}
      {preview && (
        <UpdatePreview
          preview={preview}
          onUpdate={() => void act(() => api.updateAgentTool(agent, tool.name, preview.to_version))}
          onCancel={() => setPreview(null)}
        />
      )}
      <details className="history-details">
        <summary>Code and history</summary>
        <pre className="code">{tool.code}</pre>
        <History title={`tool ${tool.name}`} source={source} onChanged={onChanged} />
      </details>
    </section>
  );
}

function Tools({ agent }: { agent: string }) {
  const [tools, setTools] = useState<AgentTool[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = useCallback(() => {
    api.agentTools(agent).then(setTools, (failure: Error) => setError(failure.message));
  }, [agent]);
  useEffect(refresh, [refresh]);
  if (error) return <div className="alert alert-danger">{error}</div>;
  if (!tools) return <div className="loading-line">Loading…</div>;
  if (!tools.length)
    return (
      <div className="empty-state">
        <h2>No tools yet</h2>
        <p className="muted">Tools the agent writes, and tools installed from the marketplace, appear here.</p>
      </div>
    );
  return (
    <>
      {tools.map((tool) => (
        <ToolCard key={tool.name} agent={agent} tool={tool} onChanged={refresh} />
      ))}
    </>
  );
}

function ComponentCard({ agent, component }: { agent: string; component: ComponentSummary }) {
  const [current, setCurrent] = useState(component);
  // The source and props schema, loaded when the person asks to review before enabling.
  const [review, setReview] = useState<ComponentDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const act = async (action: () => Promise<ComponentSummary | ComponentDetail>) => {
    try {
      setError(null);
      const result = await action();
      if ('code' in result) setReview(result);
      else {
        setCurrent(result);
        setReview(null);
        componentsChanged();
      }
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const source = useMemo<HistorySource>(
    () => ({
      versions: () => api.componentVersions(agent, component.name),
      diff: async (from, to) => (await api.componentDiff(agent, component.name, from, to)).diff,
      rollback: async (version, reason) => {
        setCurrent(await api.rollbackComponent(agent, component.name, version, reason));
        componentsChanged();
      },
    }),
    [agent, component.name],
  );
  return (
    <section className="admin-card" aria-label={`Component ${component.name}`}>
      <ArtifactHeading name={current.name} version={current.version} enabled={current.enabled} provenance={current.provenance} description={current.description} />
      <ErrorAlert error={error} />
      <div className="card-actions">
        <EnableToggle enabled={current.enabled} reviewing={review !== null} onDisable={() => void act(() => api.setComponentEnabled(agent, current.name, false))} onReview={() => void act(() => api.component(agent, current.name))} />
      </div>
      {review && (
        <ReviewBeforeEnabling
          intro="Read what this component runs in the canvas before you enable it."
          schemaLabel="Props"
          schema={review.props_schema}
          code={review.code}
          name={current.name}
          onEnable={() => void act(() => api.setComponentEnabled(agent, current.name, true))}
          onCancel={() => setReview(null)}
        />
      )}
      <History title={`component ${component.name}`} source={source} />
    </section>
  );
}

function Components({ agent }: { agent: string }) {
  const [list, setList] = useState<ComponentSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.components(agent).then(setList, (failure: Error) => setError(failure.message));
  }, [agent]);
  if (error) return <div className="alert alert-danger">{error}</div>;
  if (!list) return <div className="loading-line">Loading…</div>;
  if (!list.length)
    return (
      <div className="empty-state">
        <h2>No components yet</h2>
        <p className="muted">UI components the agent writes appear here with their history.</p>
      </div>
    );
  return (
    <>
      {list.map((component) => (
        <ComponentCard key={component.name} agent={agent} component={component} />
      ))}
    </>
  );
}

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

function StatsCard({ agent }: { agent: string }) {
  const [stats, setStats] = useState<Stats | null>(null);
  const [log, setLog] = useState<Execution[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    Promise.all([api.stats(agent, 7), api.executions(agent, { limit: 1000 })]).then(
      ([figures, rows]) => {
        const since = Date.now() - 7 * 86_400_000;
        setLog(rows.filter((row) => new Date(row.created_at).getTime() >= since));
        setStats(figures);
      },
      (failure: Error) => setError(failure.message),
    );
  }, [agent]);
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

// The categories tool errors are stored with (wright-tools' ToolError::category and the sandbox's), offered as suggestions.
const ERROR_CATEGORIES = ['invalid_arguments', 'rejected', 'limit', 'denied', 'timeout', 'syntax', 'runtime', 'memory', 'output_too_large', 'network', 'not_found', 'not_configured', 'unknown_tool', 'internal'];

function Executions({ agent }: { agent: string }) {
  const [filter, setFilter] = useState<ExecutionFilter>({});
  const [rows, setRows] = useState<Execution[] | null>(null);
  const [failures, setFailures] = useState<Execution[]>([]);
  const [tools, setTools] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.tools(agent).then((list) => setTools(list.map((tool) => tool.name).sort()), () => setTools([]));
    api.executions(agent, { success: false, limit: 5 }).then(setFailures, (failure: Error) => setError(failure.message));
  }, [agent]);
  useEffect(() => {
    setRows(null);
    api.executions(agent, { ...filter, limit: 200 }).then(setRows, (failure: Error) => setError(failure.message));
  }, [agent, filter]);
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
          <input
            aria-label="Error category"
            placeholder="Error category"
            list="error-categories"
            value={filter.error_category ?? ''}
            onChange={(event) => setFilter({ ...filter, error_category: event.target.value || undefined })}
          />
          <datalist id="error-categories">
            {ERROR_CATEGORIES.map((category) => (
              <option key={category} value={category} />
            ))}
          </datalist>
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

const POLICY_LABELS: Record<Schemas['ToolPolicy'], string> = { allow: 'run', ask: 'ask me first', deny: 'never' };

/** Per tool: whether the agent's calls run, wait for the person's approval, or are refused. */
function Policies({ agent }: { agent: string }) {
  const [tools, setTools] = useState<Tool[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.tools(agent).then(setTools, (failure: Error) => setError(failure.message));
  }, [agent]);
  const change = async (name: string, value: string) => {
    setError(null);
    try {
      const policy = value === 'default' ? null : (value as Schemas['ToolPolicy']);
      const updated = await api.setToolPolicy(agent, name, policy);
      setTools((list) => list?.map((tool) => (tool.name === name ? updated : tool)) ?? list);
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  if (error) return <ErrorAlert error={error} />;
  if (!tools) return <div className="loading-line">Loading…</div>;
  return (
    <section className="card" aria-label="Approvals">
      <h2>Approvals</h2>
      <p className="muted">
        What happens when the agent calls a tool in a conversation: it runs, it waits for you to approve it (with its
        arguments shown, which you may edit), or it is refused. Reads run by default; tools with effects outside the agent's
        own data ask first. Your own calls (<code>wright tool call</code>) are not asked about.
      </p>
      <table className="policy-table">
        <tbody>
          {[...tools]
            .sort((left, right) => left.name.localeCompare(right.name))
            .map((tool) => (
              <tr key={tool.name}>
                <td>
                  <code>{tool.name}</code>
                </td>
                <td>
                  <select aria-label={`Policy for ${tool.name}`} value={tool.overridden ? tool.policy : 'default'} onChange={(event) => void change(tool.name, event.target.value)}>
                    <option value="default">default ({POLICY_LABELS[tool.default_policy]})</option>
                    <option value="allow">run</option>
                    <option value="ask">ask me first</option>
                    <option value="deny">never</option>
                  </select>
                </td>
              </tr>
            ))}
        </tbody>
      </table>
    </section>
  );
}

export function Admin({ section, agent }: { section: string; agent: string | null }) {
  const label = ADMIN_SECTIONS.find((entry) => entry.id === section)?.label ?? 'Admin';
  return (
    <div className="admin">
      <header className="workspace-head">
        <h1 className="conversation-title">
          {label}
          {agent && section !== 'settings' && <span className="muted"> · {agent}</span>}
        </h1>
      </header>
      <div className="admin-body" key={`${section}/${agent}`}>
        {section === 'settings' ? (
          <>
            <Settings />
            <McpServers />
          </>
        ) : !agent ? (
          <p className="muted">Choose an agent.</p>
        ) : section === 'prompt' ? (
          <>
            <DocumentCard agent={agent} kind="system_prompt" />
            <DocumentCard agent={agent} kind="learned_notes" />
          </>
        ) : section === 'memory' ? (
          <Memories agent={agent} />
        ) : section === 'tools' ? (
          <>
            <Toolsets agent={agent} />
            <Policies agent={agent} />
            <Tools agent={agent} />
          </>
        ) : section === 'components' ? (
          <Components agent={agent} />
        ) : section === 'executions' ? (
          <Executions agent={agent} />
        ) : section === 'schedules' ? (
          <Schedules agent={agent} />
        ) : (
          <div className="empty-state">
            <h2>{label}</h2>
            <p className="muted">Not shown here yet.</p>
          </div>
        )}
      </div>
    </div>
  );
}
