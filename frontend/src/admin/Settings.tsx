// The Settings page: provider connections (admin/Connections.tsx), the model of every agent and
// the default (admin/ModelChoice.tsx), each model's profile (admin/ModelProfile.tsx), and the
// devices Web Push reaches (admin/Devices.tsx).
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useState } from 'react';
import { keys, modelsChanged, useAgents } from '../api/queries';
import { api } from '../api/client';
import { ErrorAlert } from './parts';
import { ConnectionCard, ConnectionForm } from './Connections';
import { ChoiceCard } from './ModelChoice';
import { Devices } from './Devices';
import { ProfileCard } from './ModelProfile';

export function Settings() {
  const client = useQueryClient();
  const connectionsQuery = useQuery({ queryKey: keys.connections, queryFn: () => api.connections() });
  const choicesQuery = useQuery({ queryKey: keys.modelChoices, queryFn: () => api.modelChoices() });
  const agents = useAgents().data ?? [];
  const connections = connectionsQuery.data?.connections ?? null;
  const choices = choicesQuery.data ?? null;
  const error = connectionsQuery.error?.message ?? choicesQuery.error?.message ?? null;
  // Remounts the model cards after a change of connections, so their lists reload.
  const [generation, setGeneration] = useState(0);
  // A change here alters the model every agent would use: the shell's notice reads it too.
  const refresh = useCallback(() => {
    void client.invalidateQueries({ queryKey: keys.modelChoices });
    modelsChanged();
  }, [client]);
  const connectionsChanged = () => {
    setGeneration((value) => value + 1);
    void client.invalidateQueries({ queryKey: keys.connections });
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
      {agents.length > 0 && (
        <section className="admin-card" aria-label="Model profiles">
          <h2>Model profiles</h2>
          <p className="muted small">
            Wright chooses settings that suit each model: a small local model gets greedy decoding, a first tool call when the message asks for one, a short reply cap and a smaller context. Change any of
            them here for the model (every agent on it gets the change); config.toml’s <code>[model_profiles]</code> applies underneath.
          </p>
          {agents.map((agent) => (
            <ProfileCard key={`${agent.id}-${generation}`} agent={agent.id} />
          ))}
        </section>
      )}
      <Devices />
    </>
  );
}
