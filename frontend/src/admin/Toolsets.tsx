// Which built-in toolsets an agent has and how their schemas reach the model: the page for
// `GET/PUT /api/agents/{agent}/tool-settings`. Fewer tools mean a shorter request and better
// tool choice, above all for small local models; the agent's own tools are always available.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { keys, useInvalidate, useTools } from '../api/queries';
import { api, type Tool, type ToolSettings, type Toolset } from '../api/client';
import { ErrorAlert } from './parts';

const TOOLSETS: { id: Toolset; label: string; hint: string }[] = [
  { id: 'self_modification', label: 'Self-modification', hint: 'its system prompt and learned notes' },
  { id: 'state', label: 'State', hint: 'key-value facts kept between conversations' },
  { id: 'database', label: 'Database', hint: 'its own SQLite database' },
  { id: 'tools', label: 'Sandbox and tools', hint: 'running JavaScript, writing its own tools' },
  { id: 'canvas', label: 'Canvas', hint: 'asking you, forms, blocks and components' },
  { id: 'web', label: 'Web', hint: 'fetching pages and searching through the egress' },
  { id: 'memory', label: 'Memory', hint: 'layered memories with expiry and recall' },
  { id: 'workspace', label: 'Workspace', hint: 'files and a confined shell' },
  { id: 'schedules', label: 'Schedules', hint: 'running prompts later by itself, notifying you' },
  { id: 'browser', label: 'Browser', hint: 'driving headless Chromium' },
  { id: 'marketplace', label: 'Marketplace', hint: 'publishing and installing tools' },
];

export function Toolsets({ agent }: { agent: string }) {
  const client = useQueryClient();
  const query = useQuery({ queryKey: keys.toolSettings(agent), queryFn: () => api.toolSettings(agent) });
  const settings = query.data ?? null;
  const setSettings = (next: ToolSettings) => client.setQueryData(keys.toolSettings(agent), next);
  const toolList = useTools(agent).data;
  const tools: Tool[] = toolList ?? [];
  const invalidate = useInvalidate();
  const [actionError, setError] = useState<string | null>(null);
  const error = actionError ?? query.error?.message ?? null;
  const [saved, setSaved] = useState(false);
  if (!settings) return error ? <ErrorAlert error={error} /> : <div className="loading-line">Loading…</div>;

  const save = async (next: ToolSettings) => {
    setError(null);
    setSaved(false);
    try {
      setSettings(await api.setToolSettings(agent, next));
      setSaved(true);
      // what the Approvals and Executions pages list follows the toolsets
      void invalidate.tools(agent);
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const toggle = (toolset: Toolset, on: boolean) => {
    const toolsets = on ? [...settings.toolsets, toolset] : settings.toolsets.filter((entry) => entry !== toolset);
    const enabledNames = new Set(tools.filter((tool) => !tool.toolset || toolsets.includes(tool.toolset)).map((tool) => tool.name));
    // A tool of a toolset switched off cannot stay in always_loaded (the server refuses it).
    void save({ ...settings, toolsets, always_loaded: settings.always_loaded.filter((name) => enabledNames.has(name)) });
  };
  const membersOf = (toolset: Toolset) => tools.filter((tool) => tool.toolset === toolset).map((tool) => tool.name);
  const loadable = tools.filter((tool) => !tool.toolset || settings.toolsets.includes(tool.toolset));

  return (
    <section className="card" aria-label="Toolsets">
      <h2>Toolsets</h2>
      <p className="muted">
        The built-in tools this agent has, by what they are for. Fewer tools make a shorter request and better tool choice, above
        all for small local models. The agent&apos;s own tools are always available.
      </p>
      <ErrorAlert error={error} />
      <ul className="toolset-list">
        {TOOLSETS.map((entry) => {
          const members = membersOf(entry.id);
          return (
            <li key={entry.id}>
              <label>
                <input type="checkbox" checked={settings.toolsets.includes(entry.id)} onChange={(event) => toggle(entry.id, event.target.checked)} />{' '}
                <strong>{entry.label}</strong> <span className="muted">— {entry.hint}</span>
              </label>
              {members.length > 0 && <div className="muted toolset-members">{members.join(', ')}</div>}
            </li>
          );
        })}
      </ul>
      <label className="field">
        How tools reach the model{' '}
        <select
          aria-label="Tool loading"
          value={settings.loading}
          onChange={(event) => void save({ ...settings, loading: event.target.value as ToolSettings['loading'] })}
        >
          <option value="on_demand">on demand: a one-line catalogue, full descriptions when the model loads them</option>
          <option value="all">all: every full description in every request</option>
        </select>
      </label>
      {settings.loading === 'on_demand' && (
        <fieldset className="field">
          <legend>Always sent whole</legend>
          {loadable.map((tool) => (
            <label key={tool.name} className="inline-check">
              <input
                type="checkbox"
                checked={settings.always_loaded.includes(tool.name)}
                onChange={(event) =>
                  void save({
                    ...settings,
                    always_loaded: event.target.checked
                      ? [...settings.always_loaded, tool.name]
                      : settings.always_loaded.filter((name) => name !== tool.name),
                  })
                }
              />{' '}
              <code>{tool.name}</code>
            </label>
          ))}
        </fieldset>
      )}
      {saved && <p className="muted" role="status">Saved: the next run uses these settings.</p>}
    </section>
  );
}
