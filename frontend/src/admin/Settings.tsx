// The Settings page: provider connections (add, edit, test, remove; the environment's shown
// read-only), the models each lists, and the model of every agent and the default. Keys go to
// the server and never come back: a connection shows only whether one is set and its last four
// characters.
import { modelsChanged } from '../api/queries';
import { useCallback, useEffect, useState } from 'react';
import { api, type Agent, type ConnectionKind, type ConnectionTest, type ListedModel, type ModelChoice, type ModelChoices, type ProviderConnection } from '../api/client';
import { ConfirmButtons, ErrorAlert } from './parts';

const KINDS: { kind: ConnectionKind; label: string; placeholder: string }[] = [
  { kind: 'openai', label: 'OpenAI', placeholder: 'https://api.openai.com/v1' },
  { kind: 'anthropic', label: 'Anthropic', placeholder: 'https://api.anthropic.com' },
  { kind: 'gemini', label: 'Google Gemini', placeholder: 'https://generativelanguage.googleapis.com' },
  { kind: 'openai_compatible', label: 'OpenAI-compatible (llama.cpp, vLLM, LM Studio)', placeholder: 'http://127.0.0.1:8080/v1' },
  { kind: 'ollama', label: 'Ollama', placeholder: 'http://127.0.0.1:11434' },
];

function kindLabel(kind: ConnectionKind): string {
  return KINDS.find((entry) => entry.kind === kind)?.label ?? kind;
}

function message(failure: unknown): string {
  return (failure as Error).message;
}

function ConnectionForm({ initial, onSaved, onCancel }: { initial?: ProviderConnection; onSaved: () => void; onCancel?: () => void }) {
  const [name, setName] = useState(initial?.name ?? '');
  const [kind, setKind] = useState<ConnectionKind>(initial?.kind ?? 'openai_compatible');
  const [baseUrl, setBaseUrl] = useState(initial?.base_url ?? '');
  const [apiKey, setApiKey] = useState('');
  const [clearKey, setClearKey] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const save = async () => {
    const input = { name, kind, base_url: baseUrl.trim() || null, api_key: apiKey.trim() || null, clear_api_key: clearKey };
    try {
      if (initial) await api.updateConnection(initial.id, input);
      else await api.createConnection(input);
      setApiKey('');
      if (!initial) {
        setName('');
        setBaseUrl('');
      }
      setError(null);
      onSaved();
    } catch (failure) {
      setError(message(failure));
    }
  };
  const keyHint = initial?.key_set ? `set${initial.key_last_four ? ` (…${initial.key_last_four})` : ''}; leave empty to keep it` : 'none';
  return (
    <form
      className="connection-form"
      aria-label={initial ? `Edit connection ${initial.name}` : 'Add a connection'}
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <label>
        Name
        <input aria-label="Connection name" value={name} onChange={(event) => setName(event.target.value)} required maxLength={100} />
      </label>
      <label>
        Provider
        <select aria-label="Provider" value={kind} onChange={(event) => setKind(event.target.value as ConnectionKind)}>
          {KINDS.map((entry) => (
            <option key={entry.kind} value={entry.kind}>
              {entry.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Base URL
        <input aria-label="Base URL" value={baseUrl} placeholder={KINDS.find((entry) => entry.kind === kind)?.placeholder} onChange={(event) => setBaseUrl(event.target.value)} />
      </label>
      <label>
        API key
        <input aria-label="API key" type="password" autoComplete="off" value={apiKey} placeholder={keyHint} onChange={(event) => setApiKey(event.target.value)} />
      </label>
      {initial?.key_set && (
        <label className="inline">
          <input type="checkbox" checked={clearKey} onChange={(event) => setClearKey(event.target.checked)} /> Remove the stored key
        </label>
      )}
      <ErrorAlert error={error} />
      <div className="card-actions">
        <button type="submit" className="button primary small">
          {initial ? 'Save connection' : 'Add connection'}
        </button>
        {onCancel && (
          <button type="button" className="button ghost small" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

function ConnectionCard({ connection, onChanged }: { connection: ProviderConnection; onChanged: () => void }) {
  const [test, setTest] = useState<ConnectionTest | null>(null);
  const [testing, setTesting] = useState(false);
  const [models, setModels] = useState<ListedModel[] | null>(null);
  const [editing, setEditing] = useState(false);
  const [removing, setRemoving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const runTest = async () => {
    setTesting(true);
    setTest(null);
    try {
      setTest(await api.testConnection(connection.id));
    } catch (failure) {
      setError(message(failure));
    } finally {
      setTesting(false);
    }
  };
  const showModels = async () => {
    try {
      setModels((await api.connectionModels(connection.id)).models);
      setError(null);
    } catch (failure) {
      setError(message(failure));
    }
  };
  const remove = async () => {
    try {
      await api.deleteConnection(connection.id);
      onChanged();
    } catch (failure) {
      setError(message(failure));
    }
  };
  return (
    <section className="admin-card connection" aria-label={`Connection ${connection.name}`}>
      <h3>
        {connection.name} <span className="pill">{kindLabel(connection.kind)}</span>
        {connection.read_only && <span className="pill">read-only</span>}
      </h3>
      <p className="muted small">
        {connection.base_url ?? `${connection.default_base_url} (default)`} · key: {connection.key_set ? `set${connection.key_last_four ? ` (…${connection.key_last_four})` : ''}` : 'none'}
        {connection.variables && <> · from the environment: {connection.variables}</>}
      </p>
      {editing ? (
        <ConnectionForm
          initial={connection}
          onSaved={() => {
            setEditing(false);
            setTest(null);
            onChanged();
          }}
          onCancel={() => setEditing(false)}
        />
      ) : removing ? (
        <ConfirmButtons label={`Remove ${connection.name}`} onConfirm={() => void remove()} onCancel={() => setRemoving(false)} />
      ) : (
        <div className="card-actions">
          <button type="button" className="button small" onClick={() => void runTest()} disabled={testing}>
            {testing ? 'Testing…' : 'Test'}
          </button>
          <button type="button" className="button small" onClick={() => void showModels()}>
            Show models
          </button>
          {!connection.read_only && (
            <>
              <button type="button" className="button ghost small" onClick={() => setEditing(true)}>
                Edit
              </button>
              <button type="button" className="button ghost small" onClick={() => setRemoving(true)}>
                Remove
              </button>
            </>
          )}
        </div>
      )}
      {test?.ok && <p role="status">Connected: the provider lists {test.model_count} models.</p>}
      {test && !test.ok && <ErrorAlert error={`The test failed: ${test.error}`} />}
      <ErrorAlert error={error} />
      {models && (
        <ul className="model-list" aria-label={`Models of ${connection.name}`}>
          {models.map((model) => (
            <li key={model.id}>
              <code>{model.id}</code>
              {model.context_window ? <span className="muted small"> · {model.context_window.toLocaleString()} tokens</span> : null}
            </li>
          ))}
          {models.length === 0 && <li className="muted">The provider lists no models.</li>}
        </ul>
      )}
    </section>
  );
}

/** The model of one agent (`agent`) or of every agent without one (`agent` null). */
function ChoiceCard({ agent, choice, connections, onChanged }: { agent: string | null; choice: ModelChoice | undefined; connections: ProviderConnection[]; onChanged: () => void }) {
  const title = agent === null ? 'Default model' : `Model of ${agent}`;
  const [connectionId, setConnectionId] = useState(choice?.connection_id ?? '');
  const [model, setModel] = useState(choice?.model ?? '');
  const [toolCalls, setToolCalls] = useState(choice?.tool_calls ?? 'native');
  const [contextWindow, setContextWindow] = useState(choice?.context_window ? String(choice.context_window) : '');
  const [models, setModels] = useState<ListedModel[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  useEffect(() => {
    setModels(null);
    if (!connectionId) return;
    api.connectionModels(connectionId).then(
      (listed) => {
        setModels(listed.models);
        setError(null);
      },
      (failure: Error) => setError(`The model list could not be read: ${failure.message}. Type the model's name instead.`),
    );
  }, [connectionId]);
  const pick = (id: string) => {
    setModel(id);
    const listed = models?.find((entry) => entry.id === id);
    if (listed?.context_window) setContextWindow(String(listed.context_window));
  };
  const save = async () => {
    const input = { connection_id: connectionId, model, tool_calls: toolCalls, context_window: contextWindow.trim() ? Number(contextWindow) : null };
    try {
      const result = agent === null ? await api.setDefaultModel(input) : await api.setAgentModel(agent, input);
      setSaved(`Saved: ${result.model}. The next run uses it.`);
      setError(null);
      onChanged();
    } catch (failure) {
      setError(message(failure));
    }
  };
  const clear = async () => {
    try {
      if (agent === null) await api.clearDefaultModel();
      else await api.clearAgentModel(agent);
      setConnectionId('');
      setModel('');
      setSaved(agent === null ? 'Cleared: agents without their own model use the environment’s.' : 'Cleared: this agent uses the default model.');
      onChanged();
    } catch (failure) {
      setError(message(failure));
    }
  };
  return (
    <section className="admin-card choice" aria-label={title}>
      <h3>{title}</h3>
      <p className="muted small">{choice ? `Now: ${choice.model} on ${connections.find((entry) => entry.id === choice.connection_id)?.name ?? choice.connection_id}` : agent === null ? 'Now: the environment’s model, if any.' : 'Now: the default model.'}</p>
      <form
        className="choice-form"
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <label>
          Connection
          <select aria-label="Connection" value={connectionId} onChange={(event) => setConnectionId(event.target.value)}>
            <option value="">Choose a connection</option>
            {connections.map((entry) => (
              <option key={entry.id} value={entry.id}>
                {entry.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Model
          {models && models.length > 0 ? (
            <select aria-label="Model" value={model} onChange={(event) => pick(event.target.value)}>
              <option value="">Choose a model</option>
              {models.map((entry) => (
                <option key={entry.id} value={entry.id}>
                  {entry.id}
                </option>
              ))}
              {model && !models.some((entry) => entry.id === model) && <option value={model}>{model}</option>}
            </select>
          ) : (
            <input aria-label="Model" value={model} onChange={(event) => setModel(event.target.value)} placeholder="model name" />
          )}
        </label>
        <label>
          Tool calls
          <select aria-label="Tool calls" value={toolCalls} onChange={(event) => setToolCalls(event.target.value as typeof toolCalls)}>
            <option value="native">Native (the API’s own tool calls)</option>
            <option value="text">Text protocol (models without tool calls)</option>
          </select>
        </label>
        <label>
          Context window (tokens)
          <input aria-label="Context window" type="number" min={1} value={contextWindow} placeholder="as the provider says" onChange={(event) => setContextWindow(event.target.value)} />
        </label>
        <ErrorAlert error={error} />
        {saved && <p role="status">{saved}</p>}
        <div className="card-actions">
          <button type="submit" className="button primary small" disabled={!connectionId || !model.trim()}>
            Save model
          </button>
          {choice && (
            <button type="button" className="button ghost small" onClick={() => void clear()}>
              Clear
            </button>
          )}
        </div>
      </form>
    </section>
  );
}

export function Settings() {
  const [connections, setConnections] = useState<ProviderConnection[] | null>(null);
  const [choices, setChoices] = useState<ModelChoices | null>(null);
  const [agents, setAgents] = useState<Agent[]>([]);
  const [error, setError] = useState<string | null>(null);
  // Remounts the model cards after a change of connections, so their lists reload.
  const [generation, setGeneration] = useState(0);
  const refresh = useCallback(() => {
    // the shell's "which model" notice reads from the cache
    modelsChanged();
    Promise.all([api.connections(), api.modelChoices()]).then(
      ([listed, chosen]) => {
        setConnections(listed.connections);
        setChoices(chosen);
      },
      (failure: Error) => setError(failure.message),
    );
  }, []);
  useEffect(() => {
    refresh();
    api.agents().then(setAgents, (failure: Error) => setError(failure.message));
  }, [refresh]);
  const connectionsChanged = () => {
    setGeneration((value) => value + 1);
    refresh();
  };
  return (
    <>
      <ErrorAlert error={error} />
      <section className="admin-card" aria-label="Provider connections">
        <h2>Provider connections</h2>
        <p className="muted small">
          Keys are kept in the data directory, readable only by the server’s user, and never shown again. Connections from the environment of <code>wright serve</code> are read-only. Which model a
          run uses: the agent’s own model below, then its model in config.toml, then the default model below, then the environment’s.
        </p>
        {connections === null ? <p className="muted">Loading…</p> : connections.map((connection) => <ConnectionCard key={connection.id} connection={connection} onChanged={connectionsChanged} />)}
        <h3>Add a connection</h3>
        <ConnectionForm onSaved={connectionsChanged} />
      </section>
      {connections && choices && (
        <section className="admin-card" aria-label="Models">
          <h2>Models</h2>
          <ChoiceCard key={`default-${generation}`} agent={null} choice={choices.default ?? undefined} connections={connections} onChanged={refresh} />
          {agents.map((agent) => (
            <ChoiceCard key={`${agent.id}-${generation}`} agent={agent.id} choice={choices.agents.find((entry) => entry.agent === agent.id)} connections={connections} onChanged={refresh} />
          ))}
        </section>
      )}
    </>
  );
}
