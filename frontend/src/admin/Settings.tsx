// The Settings page: provider connections (admin/Connections.tsx), and the model of every agent
// and the default (admin/ModelChoice.tsx), the devices Web Push reaches (admin/Devices.tsx).
import { useCallback, useEffect, useState } from 'react';
import { modelsChanged } from '../api/queries';
import { api, type Agent, type ModelChoices, type ProviderConnection } from '../api/client';
import { ErrorAlert } from './parts';
import { ConnectionCard, ConnectionForm } from './Connections';
import { ChoiceCard } from './ModelChoice';
import { Devices } from './Devices';

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
      <Devices />
    </>
  );
}
