// Provider connections on the Settings page: the form that adds or edits one, and a connection's
// card (test it, list its models, edit, remove; the environment's read-only). Keys go to the
// server and never come back: a card shows only whether one is set and its last four characters.
import { useState } from 'react';
import { api, type ConnectionKind, type ConnectionTest, type ListedModel, type ProviderConnection } from '../api/client';
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

export function message(failure: unknown): string {
  return (failure as Error).message;
}

export function ConnectionForm({ initial, onSaved, onCancel }: { initial?: ProviderConnection; onSaved: () => void; onCancel?: () => void }) {
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

export function ConnectionCard({ connection, onChanged }: { connection: ProviderConnection; onChanged: () => void }) {
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
