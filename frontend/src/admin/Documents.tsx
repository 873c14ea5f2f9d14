// The system prompt, learned notes and database notes (what each table is for) of an agent: the current text, an edit with a reason, and
// the version timeline with diffs and rollback.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useMemo, useState } from 'react';
import { api, type DocumentKind } from '../api/client';
import { keys } from '../api/queries';
import { History, type HistorySource } from './History';

export function DocumentCard({ agent, kind }: { agent: string; kind: DocumentKind }) {
  const client = useQueryClient();
  const query = useQuery({ queryKey: keys.document(agent, kind), queryFn: () => api.document(agent, kind) });
  const doc = query.data ?? null;
  const [actionError, setError] = useState<string | null>(null);
  const error = actionError ?? query.error?.message ?? null;
  // An edit or a rollback is a new version: the text, and what the next run's system message says.
  const refresh = useCallback(() => void client.invalidateQueries({ queryKey: keys.document(agent, kind) }), [client, agent, kind]);
  const source = useMemo<HistorySource>(
    () => ({
      versions: () => api.versions(agent, kind),
      diff: async (from, to) => (await api.documentDiff(agent, kind, from, to)).diff,
      rollback: async (version, reason) => {
        await api.rollbackDocument(agent, kind, version, reason);
        refresh();
      },
    }),
    [agent, kind, refresh],
  );
  const title = kind === 'system_prompt' ? 'System prompt' : kind === 'learned_notes' ? 'Learned notes' : 'Database notes';
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
