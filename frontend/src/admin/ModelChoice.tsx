// The model of one agent, or the default: a connection, a model it lists (or one typed in), its
// tool-call format and context window.
import { useEffect, useState } from 'react';
import { api, type ListedModel, type ModelChoice, type ProviderConnection } from '../api/client';
import { ErrorAlert } from './parts';
import { message } from './Connections';

/** The model of one agent (`agent`) or of every agent without one (`agent` null). */
export function ChoiceCard({ agent, choice, connections, onChanged }: { agent: string | null; choice: ModelChoice | undefined; connections: ProviderConnection[]; onChanged: () => void }) {
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
