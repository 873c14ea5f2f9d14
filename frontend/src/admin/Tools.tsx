// An agent's tools: the ones it wrote or installed (versions, diffs, rollback, enable, update from
// the marketplace) and, per tool, whether its calls run, wait for the person, or are refused.
import { useMemo, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, type AgentTool, type Schemas, type Tool } from '../api/client';
import { keys, useAgentTools, useInvalidate, useTools } from '../api/queries';
import { UpdatePreview, type UpdatePreviewData } from './UpdatePreview';
import { History, type HistorySource } from './History';
import { ErrorAlert } from './parts';
import { ArtifactHeading, EnableToggle, ReviewBeforeEnabling } from './artifacts';

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

export function Tools({ agent }: { agent: string }) {
  const query = useAgentTools(agent);
  const tools = query.data ?? null;
  const error = query.error?.message ?? null;
  const invalidate = useInvalidate();
  const refresh = () => void invalidate.agentTools(agent);
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

const POLICY_LABELS: Record<Schemas['ToolPolicy'], string> = { allow: 'run', ask: 'ask me first', deny: 'never' };

/** Per tool: whether the agent's calls run, wait for the person's approval, or are refused. */
export function Policies({ agent }: { agent: string }) {
  const toolsQuery = useTools(agent);
  const queryClient = useQueryClient();
  const tools = toolsQuery.data ?? null;
  const [changeError, setChangeError] = useState<string | null>(null);
  const error = changeError ?? toolsQuery.error?.message ?? null;
  const change = async (name: string, value: string) => {
    setChangeError(null);
    try {
      const policy = value === 'default' ? null : (value as Schemas['ToolPolicy']);
      const updated = await api.setToolPolicy(agent, name, policy);
      queryClient.setQueryData<Tool[]>(keys.tools(agent), (list) => list?.map((tool) => (tool.name === name ? updated : tool)));
    } catch (failure) {
      setChangeError((failure as Error).message);
    }
  };
  if (error) return <ErrorAlert error={error} />;
  if (!tools) return <div className="loading-line">Loading…</div>;
  return (
    <section className="card" aria-label="Approvals">
      <h2>Approvals</h2>
      <p className="muted">
        What happens when the agent calls a tool in a conversation: it runs, it waits for you to approve it (with its
        arguments shown, which you may edit), or it is refused. Reads, and writes and commands in the agent's own workspace,
        run by default; tools with effects outside the agent's own data ask first, and once a conversation has read content
        from outside (a web page, a search, an MCP server) anything that changes the agent, writes files or sends data out
        asks too. Your own calls (<code>wright tool call</code>) are not asked about.
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
                  {!tool.overridden && tool.asks_when && <div className="muted small">{tool.asks_when}</div>}
                </td>
              </tr>
            ))}
        </tbody>
      </table>
    </section>
  );
}
