// One listing of the marketplace: its code, schema, statistics and versions; installing it into
// an agent (choosing what happens on a name conflict), updating or uninstalling an installed copy,
// and exporting a version as a JSON file.
import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, ApiError, type Agent, type AgentTool } from '../api/client';
import { keys, useAgentTools, useInvalidate } from '../api/queries';
import { navigate, routePath } from '../router';
import { UpdatePreview, type UpdatePreviewData } from '../admin/UpdatePreview';
import { when } from '../admin/History';
import { ErrorAlert, Stat } from '../admin/parts';

export type Bundle = {
  kind?: string;
  name?: string;
  description?: string;
  code?: string;
  parameter_schema?: unknown;
  props_schema?: unknown;
  /** A skill's SKILL.md and its files (path → text). */
  content?: string;
  resources?: Record<string, string>;
};

export function pretty(value: unknown): string {
  return JSON.stringify(value ?? null, null, 2);
}

/** Saves `value` as a JSON file through the browser's download. */
export function downloadJson(filename: string, value: unknown): void {
  const url = URL.createObjectURL(new Blob([JSON.stringify(value, null, 2)], { type: 'application/json' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function Installed({ agent, tool, onChanged }: { agent: string; tool: AgentTool; onChanged: () => void }) {
  const [preview, setPreview] = useState<UpdatePreviewData | null>(null);
  const [error, setError] = useState<string | null>(null);
  const origin = tool.provenance as { version?: number };
  const run = async (action: () => Promise<unknown>) => {
    try {
      setError(null);
      await action();
      setPreview(null);
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <div className="review" aria-label={`Installed as ${tool.name}`}>
      <div>
        In <b>{agent}</b> as <code>{tool.name}</code> (listing v{origin.version}) · <span className={`pill ${tool.enabled ? 'pill-success' : 'pill-warning'}`}>{tool.enabled ? 'enabled' : 'disabled'}</span>{' '}
        {!tool.enabled && (
          <a href={routePath({ page: 'admin', section: 'tools', agent, rest: [] })} onClick={(event) => (event.preventDefault(), navigate(routePath({ page: 'admin', section: 'tools', agent, rest: [] })))}>
            review and enable in admin
          </a>
        )}
      </div>
      <ErrorAlert error={error} />
      <div className="card-actions">
        <button type="button" className="button small" onClick={() => void api.updatePreview(agent, tool.name).then(setPreview, (failure: Error) => setError(failure.message))}>
          Check for update
        </button>
        <button type="button" className="button small ghost" onClick={() => void run(() => api.uninstallAgentTool(agent, tool.name))}>
          Uninstall
        </button>
      </div>
      {preview && (
        <UpdatePreview
          preview={preview}
          onUpdate={() => void run(() => api.updateAgentTool(agent, tool.name, preview.to_version))}
          onCancel={() => setPreview(null)}
        />
      )}
    </div>
  );
}

export function ListingPage({ kind, name, agents, agent: defaultAgent }: { kind: string; name: string; agents: Agent[]; agent: string | null }) {
  const listing = useQuery({ queryKey: keys.listing(kind, name), queryFn: () => api.listing(kind, name) });
  const detail = listing.data ?? null;
  const [actionError, setError] = useState<string | null>(null);
  const error = actionError ?? listing.error?.message ?? null;
  const [picked, setChosen] = useState<number | null>(null);
  const chosen = picked ?? detail?.listing.latest_version ?? null;
  const [agent, setAgent] = useState(defaultAgent ?? '');
  const agentTools = useAgentTools(kind === 'tool' && agent ? agent : null);
  const tools: AgentTool[] = agentTools.data ?? [];
  const invalidate = useInvalidate();
  const [conflict, setConflict] = useState<string | null>(null);
  const [rename, setRename] = useState('');
  const [notice, setNotice] = useState<string | null>(null);
  useEffect(() => setAgent((current) => current || defaultAgent || ''), [defaultAgent]);
  // An install here shows on the agent's Tools page too.
  const refreshTools = () => {
    if (agent) void invalidate.agentTools(agent);
  };

  if (error) return <div className="alert alert-danger">{error}</div>;
  if (!detail) return <div className="loading-line">Loading…</div>;
  const version = detail.versions.find((entry) => entry.version === chosen) ?? detail.versions[0];
  const bundle = (version?.bundle ?? {}) as Bundle;
  const installedHere = tools.filter((tool) => (tool.provenance as { listing?: string } | null)?.listing === name);

  const install = async (renameTo: string | null) => {
    setError(null);
    setNotice(null);
    if (renameTo === null && tools.some((tool) => tool.name === name)) {
      setConflict(name);
      setRename(`${name}_2`);
      return;
    }
    try {
      const installed = await api.install({ agent, kind, listing: name, version: version?.version ?? null, rename_to: renameTo });
      setConflict(null);
      setNotice(`Installed into ${agent} as ${installed.name} (v${installed.version}), disabled until you review and enable it.`);
      refreshTools();
    } catch (failure) {
      if (failure instanceof ApiError && /already has/.test(failure.message)) setConflict(renameTo ?? name);
      setError((failure as Error).message);
    }
  };
  const exportFile = async () => {
    try {
      const exported = await api.exportListing(kind, name, version?.version);
      downloadJson(`${name}-v${exported.listing_version}.wright.json`, exported);
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  const stats = detail.stats;
  return (
    <>
      <section className="admin-card" aria-label={`Listing ${name}`}>
        <h2>
          <code>{detail.listing.name}</code> <span className="pill">{detail.listing.kind}</span> <span className="pill pill-accent">latest v{detail.listing.latest_version}</span>
        </h2>
        <p>{detail.listing.description}</p>
        <p className="muted small">
          Published by {detail.listing.publisher_agent} · {when(detail.listing.created_at)}
        </p>
        <div className="stat-row">
          <Stat value={stats.calls} label="calls" />
          <Stat value={`${Math.round(stats.success_rate * 100)}%`} label="success rate" />
          <Stat value={stats.median_duration_us == null ? '–' : `${(stats.median_duration_us / 1000).toFixed(1)} ms`} label="median duration" />
          <Stat value={stats.recent_error_categories.join(', ') || '–'} label="recent errors" />
        </div>
      </section>
      <section className="admin-card" aria-label="Install">
        <h2>Install</h2>
        <div className="filters">
          <select aria-label="Version" value={version?.version ?? ''} onChange={(event) => setChosen(Number(event.target.value))}>
            {detail.versions.map((entry) => (
              <option key={entry.version} value={entry.version}>
                v{entry.version}
              </option>
            ))}
          </select>
          <select aria-label="Install into agent" value={agent} onChange={(event) => (setAgent(event.target.value), setConflict(null))}>
            {agents.map((item) => (
              <option key={item.id} value={item.id}>
                {item.name || item.id}
              </option>
            ))}
          </select>
          <button type="button" className="button primary" onClick={() => void install(null)} disabled={!agent}>
            Install into {agent || '…'}
          </button>
          <button type="button" className="button" onClick={() => void exportFile()}>
            Export v{version?.version} as JSON
          </button>
        </div>
        {conflict && (
          <div className="review" aria-label="Name conflict">
            <p className="small">
              {agent} already has a {kind} named <code>{conflict}</code>. Keep it and cancel, or install this one under another name:
            </p>
            <div className="card-actions">
              <input aria-label="New name" value={rename} onChange={(event) => setRename(event.target.value)} />
              <button type="button" className="button primary small" onClick={() => void install(rename.trim())} disabled={!rename.trim()}>
                Install as {rename.trim() || '…'}
              </button>
              <button type="button" className="button ghost small" onClick={() => (setConflict(null), setError(null))}>
                Cancel (keep the existing one)
              </button>
            </div>
          </div>
        )}
        <ErrorAlert error={error} />
        {notice && (
          <div className="alert alert-success" role="status">
            {notice}
          </div>
        )}
        {installedHere.map((tool) => (
          <Installed key={tool.name} agent={agent} tool={tool} onChanged={refreshTools} />
        ))}
      </section>
      <section className="admin-card" aria-label={`Version ${version?.version}`}>
        <h2>
          v{version?.version} <span className="pill" title={version?.hash}>{version?.hash.slice(0, 16)}</span> <span className="pill">{version?.source}</span>
        </h2>
        {bundle.kind === 'skill' ? (
          <>
            <div className="sub-label">SKILL.md</div>
            <pre className="code listing-code">{bundle.content}</pre>
            {Object.entries(bundle.resources ?? {}).map(([path, text]) => (
              <details key={path}>
                <summary>
                  <code>{path}</code>
                </summary>
                <pre className="code">{text}</pre>
              </details>
            ))}
          </>
        ) : (
          <>
            <div className="sub-label">Code</div>
            <pre className="code listing-code">{bundle.code}</pre>
            <div className="sub-label">Schema</div>
            <pre className="code">{pretty(bundle.parameter_schema ?? bundle.props_schema)}</pre>
          </>
        )}
      </section>
      <section className="admin-card" aria-label="Versions">
        <h2>Versions</h2>
        <ol className="timeline">
          {[...detail.versions]
            .sort((a, b) => b.version - a.version)
            .map((entry) => (
              <li key={entry.version} className="timeline-item">
                <div className="timeline-main">
                  <span className="pill">v{entry.version}</span>
                  <span className="muted small">
                    {entry.publisher_agent} · {entry.source} · {when(entry.created_at)}
                  </span>
                  <code className="small" title={entry.hash}>
                    {entry.hash.slice(0, 16)}
                  </code>
                  <button type="button" className="button small ghost" onClick={() => setChosen(entry.version)}>
                    Show code
                  </button>
                </div>
                <div className="timeline-reason">{entry.description}</div>
              </li>
            ))}
        </ol>
      </section>
    </>
  );
}
