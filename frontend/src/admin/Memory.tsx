// The memory page: an agent's memories by layer, a search over them, and for each memory an
// edit, forget (with a confirmation), restore for forgotten and expired ones, and its history of
// changes (who changed it, from which conversation). Only calls the memory API; every change
// here is recorded as the person's (author `admin`).
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useState } from 'react';
import { keys } from '../api/queries';
import { api, type Memory, type MemoryChange, type MemoryLayer } from '../api/client';
import { when } from './History';
import { ConfirmButtons, ErrorAlert } from './parts';

const LAYERS: { id: MemoryLayer; label: string; hint: string }[] = [
  { id: 'long', label: 'Long-term', hint: 'permanent: facts, preferences, relationships' },
  { id: 'mid', label: 'Mid-term', hint: 'goals, plans, projects' },
  { id: 'short', label: 'Short-term', hint: 'recent context, summaries' },
  { id: 'session', label: 'Session', hint: 'ends with its conversation' },
];

type View = MemoryLayer | 'archived';

function MemoryHistory({ agent, id }: { agent: string; id: number }) {
  // Under the memories' key: a change to the memory invalidates its history with the lists.
  const query = useQuery({ queryKey: [...keys.memories(agent), 'history', id], queryFn: () => api.memoryHistory(agent, id) });
  const changes: MemoryChange[] | null = query.data ?? null;
  const error = query.error?.message ?? null;
  return (
    <div className="memory-history" aria-label={`History of memory ${id}`}>
      <ErrorAlert error={error} />
      {changes === null && !error && <p className="muted small">Loading…</p>}
      <ol>
        {changes?.map((change) => (
          <li key={change.id} data-testid="memory-change">
            <span className={`pill ${change.action === 'forget' || change.action === 'expire' ? 'pill-warning' : ''}`}>{change.action}</span>{' '}
            <span className="muted small">
              {change.author} · {when(change.created_at)}
              {change.conversation_id ? ` · conversation ${change.conversation_id}` : ''}
            </span>
            <div>
              <span className="muted small">[{change.layer}{change.category ? `/${change.category}` : ''}]</span> {change.content}
            </div>
          </li>
        ))}
      </ol>
    </div>
  );
}

function MemoryItem({ agent, memory, onChanged }: { agent: string; memory: Memory; onChanged: () => void }) {
  const [draft, setDraft] = useState<{ content: string; category: string; layer: MemoryLayer } | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [showHistory, setShowHistory] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // Remounting the history after a change reloads it.
  const [generation, setGeneration] = useState(0);
  const act = async (action: () => Promise<unknown>) => {
    try {
      await action();
      setError(null);
      setDraft(null);
      setConfirming(false);
      setGeneration((value) => value + 1);
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const archived = memory.archived_at !== null && memory.archived_at !== undefined;
  return (
    <li className="admin-card memory-item" data-testid="memory" data-memory-id={memory.id}>
      <div className="memory-head">
        <span className="pill pill-accent">{memory.layer}</span>
        {memory.category && <span className="pill">{memory.category}</span>}
        {memory.certainty !== null && memory.certainty !== undefined && <span className="pill">certainty {memory.certainty}</span>}
        {memory.relevance !== null && memory.relevance !== undefined && <span className="pill">relevance {memory.relevance.toFixed(2)}</span>}
        {archived && <span className="pill pill-warning">{memory.archived_reason === 'expire' ? 'expired' : 'forgotten'}</span>}
        <span className="muted small">
          #{memory.id} · {memory.author} · {when(memory.created_at)}
          {!archived && (memory.expires_at ? ` · until ${when(memory.expires_at)}` : ' · permanent')}
        </span>
      </div>
      <ErrorAlert error={error} />
      {draft === null ? (
        <p className="memory-content" data-testid="memory-content">
          {memory.content}
        </p>
      ) : (
        <form
          className="doc-edit"
          onSubmit={(event) => {
            event.preventDefault();
            void act(() => api.editMemory(agent, memory.id, { content: draft.content, category: draft.category, layer: draft.layer }));
          }}
        >
          <textarea aria-label="Memory text" value={draft.content} rows={3} onChange={(event) => setDraft({ ...draft, content: event.target.value })} />
          <div className="card-actions">
            <select aria-label="Layer" value={draft.layer} onChange={(event) => setDraft({ ...draft, layer: event.target.value as MemoryLayer })}>
              {LAYERS.map((layer) => (
                <option key={layer.id} value={layer.id}>
                  {layer.label}
                </option>
              ))}
            </select>
            <input aria-label="Category" placeholder="Category" value={draft.category} onChange={(event) => setDraft({ ...draft, category: event.target.value })} />
            <button type="submit" className="button primary small" disabled={!draft.content.trim()}>
              Save
            </button>
            <button type="button" className="button ghost small" onClick={() => setDraft(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {confirming ? (
        <>
          <p className="small">Forget this memory? The agent will no longer see it; you can restore it from “Archived”.</p>
          <ConfirmButtons label="Forget" onConfirm={() => void act(() => api.forgetMemory(agent, memory.id))} onCancel={() => setConfirming(false)} />
        </>
      ) : (
        draft === null && (
          <div className="card-actions">
            <button type="button" className="button small" onClick={() => setDraft({ content: memory.content, category: memory.category ?? '', layer: memory.layer })}>
              Edit
            </button>
            {archived ? (
              <button type="button" className="button small" onClick={() => void act(() => api.restoreMemory(agent, memory.id))}>
                Restore
              </button>
            ) : (
              <button type="button" className="button small" onClick={() => setConfirming(true)}>
                Forget
              </button>
            )}
            <button type="button" className="button ghost small" aria-expanded={showHistory} onClick={() => setShowHistory((value) => !value)}>
              History
            </button>
          </div>
        )
      )}
      {showHistory && <MemoryHistory key={generation} agent={agent} id={memory.id} />}
    </li>
  );
}

export function Memories({ agent }: { agent: string }) {
  const [view, setView] = useState<View>('long');
  const [search, setSearch] = useState('');
  const [submitted, setSubmitted] = useState('');
  const client = useQueryClient();
  const filter = view === 'archived' ? { archived: true } : { layer: view };
  const query = useQuery({ queryKey: [...keys.memories(agent), view, submitted.trim()], queryFn: () => api.memories(agent, { ...filter, query: submitted.trim() || undefined }) });
  const memories = query.data ?? null;
  const [actionError, setError] = useState<string | null>(null);
  const error = actionError ?? query.error?.message ?? null;
  const [adding, setAdding] = useState('');
  // A memory added, edited, forgotten or restored moves between layers: every list is stale.
  const refresh = useCallback(() => void client.invalidateQueries({ queryKey: keys.memories(agent) }), [client, agent]);
  const layer = LAYERS.find((entry) => entry.id === view);
  return (
    <section className="memories" aria-label="Memories">
      <div className="filters" role="tablist" aria-label="Memory layers">
        {[...LAYERS.map((entry) => ({ id: entry.id as View, label: entry.label })), { id: 'archived' as View, label: 'Archived' }].map((entry) => (
          <button key={entry.id} type="button" role="tab" aria-selected={view === entry.id} className={`button small ${view === entry.id ? 'primary' : 'ghost'}`} onClick={() => setView(entry.id)}>
            {entry.label}
          </button>
        ))}
      </div>
      <form
        className="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setSubmitted(search);
        }}
      >
        <input type="search" aria-label="Search memories" placeholder="Search memories" value={search} onChange={(event) => setSearch(event.target.value)} />
        <button type="submit" className="button small">
          Search
        </button>
        {submitted && (
          <button
            type="button"
            className="button ghost small"
            onClick={() => {
              setSearch('');
              setSubmitted('');
            }}
          >
            Clear
          </button>
        )}
      </form>
      <p className="muted small">{layer ? `${layer.label}: ${layer.hint}.` : 'Forgotten and expired memories; restore one to give it back to the agent.'}</p>
      {layer && (
        <form
          className="filters"
          onSubmit={(event) => {
            event.preventDefault();
            void api.createMemory(agent, { layer: layer.id, content: adding }).then(
              () => {
                setAdding('');
                refresh();
              },
              (failure: Error) => setError(failure.message),
            );
          }}
        >
          <input aria-label="New memory" placeholder={`Add a ${layer.label.toLowerCase()} memory`} value={adding} onChange={(event) => setAdding(event.target.value)} />
          <button type="submit" className="button small" disabled={!adding.trim()}>
            Add
          </button>
        </form>
      )}
      <ErrorAlert error={error} />
      {memories === null && !error && <p className="muted">Loading…</p>}
      {memories?.length === 0 && <p className="muted">{submitted ? 'No memory matches.' : 'No memories here.'}</p>}
      <ul className="memory-list">
        {memories?.map((memory) => (
          <MemoryItem key={`${memory.id}-${memory.updated_at}`} agent={agent} memory={memory} onChanged={refresh} />
        ))}
      </ul>
    </section>
  );
}
