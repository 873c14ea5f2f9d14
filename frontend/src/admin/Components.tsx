// An agent's UI components: versions, diffs, rollback, and the review before enabling one.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { keys } from '../api/queries';
import { api, type ComponentDetail, type ComponentSummary } from '../api/client';
import { History, type HistorySource } from './History';
import { componentsChanged } from '../frame/componentsChannel';
import { ErrorAlert } from './parts';
import { ArtifactHeading, EnableToggle, ReviewBeforeEnabling } from './artifacts';

function ComponentCard({ agent, component }: { agent: string; component: ComponentSummary }) {
  const client = useQueryClient();
  const [current, setShown] = useState(component);
  // A rollback or a switch shows at once here and refreshes the list every page reads.
  const setCurrent = (changed: ComponentSummary) => {
    setShown(changed);
    void client.invalidateQueries({ queryKey: keys.components(agent) });
  };
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
        setShown(await api.rollbackComponent(agent, component.name, version, reason));
        void client.invalidateQueries({ queryKey: keys.components(agent) });
        componentsChanged();
      },
    }),
    [agent, component.name, client],
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

export function Components({ agent }: { agent: string }) {
  const query = useQuery({ queryKey: keys.components(agent), queryFn: () => api.components(agent) });
  const list = query.data ?? null;
  const error = query.error?.message ?? null;
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
