// The agent's learning (issue 31): the learning curve (held-out cases passed before and after
// each round), the rounds with each candidate's per-case before/after, the learned items with
// their counters (approve, reject, roll back — each a new version of the item), the cases
// (made from a conversation or a message, with a check judged from stored data), and the
// settings: approval before an item goes live, a nightly round. A round runs in the background;
// this page follows its progress.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type CaseCheck, type ItemDecision, type LearnedItem, type LearningRound } from '../api/client';
import { useConversations } from '../api/queries';
import { ErrorAlert } from './parts';

const learningKey = (agent: string) => ['learning', agent] as const;

const DECISIONS: Record<string, string> = { accepted: 'pill-success', awaiting_approval: 'pill-warning', refused: 'pill-danger' };
const STATUS: Record<string, string> = { live: 'pill-success', awaiting_approval: 'pill-warning', refused: 'pill-danger', rolled_back: 'pill-danger', rejected: '' };

function rate(passed: number | null | undefined, total: number): string {
  return passed === null || passed === undefined || total === 0 ? '—' : `${Math.round((100 * passed) / total)}%`;
}

/** One bar per finished round: the held-out pass rate after it, over the rate before it. */
function Curve({ rounds }: { rounds: LearningRound[] }) {
  const finished = rounds.filter((round) => round.status === 'finished' && round.held_out_total > 0);
  if (finished.length === 0) return <p className="muted">No finished round with held-out cases yet.</p>;
  return (
    <ol className="learning-curve" aria-label="Learning curve">
      {finished.map((round) => {
        const after = (round.passed_after ?? 0) / round.held_out_total;
        const before = (round.passed_before ?? 0) / round.held_out_total;
        return (
          <li key={round.id} aria-label={`Round ${round.id}: held-out ${rate(round.passed_before, round.held_out_total)} before, ${rate(round.passed_after, round.held_out_total)} after`}>
            <div className="curve-bar" style={{ height: `${Math.max(4, after * 100)}%` }} />
            <div className="curve-before" style={{ bottom: `${before * 100}%` }} />
            <span className="small muted">#{round.id}</span>
          </li>
        );
      })}
    </ol>
  );
}

function RoundDetail({ agent, id }: { agent: string; id: number }) {
  const detail = useQuery({ queryKey: [...learningKey(agent), 'round', id], queryFn: () => api.round(agent, id), refetchInterval: (query) => (query.state.data?.round.status === 'running' ? 1000 : false) });
  if (!detail.data) return <div className="loading-line">Loading…</div>;
  const { candidates } = detail.data;
  if (candidates.length === 0) return <p className="muted">No candidates in this round.</p>;
  return (
    <div className="round-detail">
      {candidates.map((candidate) => (
        <div key={candidate.item.id} className="admin-card" aria-label={`Candidate ${candidate.item.id}`}>
          <h3>
            #{candidate.item.id} {candidate.item.kind}
            {candidate.decision && <span className={`pill ${DECISIONS[candidate.decision] ?? ''}`}>{candidate.decision}</span>}
            <span className="muted small">{candidate.added_tokens} tokens</span>
          </h3>
          <p className="small">{candidate.item.text}</p>
          {candidate.reason && <p className="muted small">{candidate.reason}</p>}
          <table className="schedule-table">
            <thead>
              <tr>
                <th>Case</th>
                <th>Without it</th>
                <th>With it</th>
              </tr>
            </thead>
            <tbody>
              {candidate.cases.map((result) => (
                <tr key={result.case_id} aria-label={`Case ${result.case_id} before and after`}>
                  <td>{result.message ?? `#${result.case_id}`}</td>
                  <td title={result.before_detail ?? ''}>{result.before === null || result.before === undefined ? '—' : result.before ? 'pass' : 'fail'}</td>
                  <td title={result.after_detail ?? ''}>{result.after === null || result.after === undefined ? '—' : result.after ? 'pass' : 'fail'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </div>
  );
}

const ACTIONS: { action: ItemDecision; label: string; when: (item: LearnedItem) => boolean }[] = [
  { action: 'approve', label: 'Approve', when: (item) => item.status === 'awaiting_approval' || item.status === 'rolled_back' || item.status === 'refused' },
  { action: 'reject', label: 'Reject', when: (item) => item.status === 'awaiting_approval' || item.status === 'candidate' },
  { action: 'roll_back', label: 'Roll back', when: (item) => item.status === 'live' },
];

const CHECK_KINDS: { type: CaseCheck['type']; label: string }[] = [
  { type: 'state_equals', label: 'state equals' },
  { type: 'notes_contain', label: 'notes contain' },
  { type: 'db_count', label: 'database count at least' },
  { type: 'tool_succeeded', label: 'tool succeeded' },
  { type: 'file_contains', label: 'file contains' },
  { type: 'pending_call', label: 'waits on a call of' },
];

function checkOf(type: CaseCheck['type'], first: string, second: string): CaseCheck {
  switch (type) {
    case 'state_equals': {
      let value: unknown = second;
      try {
        value = JSON.parse(second);
      } catch {
        // Plain text is a string value.
      }
      return { type, key: first, value };
    }
    case 'notes_contain':
      return { type, text: first };
    case 'db_count':
      return { type, sql: first, min: Number(second) || 1 };
    case 'tool_succeeded':
    case 'pending_call':
      return { type, tool: first };
    case 'file_contains':
      return { type, path: first, text: second };
  }
}

function describe(check: CaseCheck): string {
  switch (check.type) {
    case 'state_equals':
      return `state ${check.key} = ${JSON.stringify(check.value)}`;
    case 'notes_contain':
      return `notes contain “${check.text}”`;
    case 'db_count':
      return `${check.sql} ≥ ${check.min}`;
    case 'tool_succeeded':
      return `${check.tool} succeeded`;
    case 'file_contains':
      return `${check.path} contains “${check.text}”`;
    case 'pending_call':
      return `a call of ${check.tool} waits`;
  }
}

function NewCaseForm({ agent, onMade }: { agent: string; onMade: () => void }) {
  const conversations = useConversations(agent);
  const [from, setFrom] = useState('');
  const [message, setMessage] = useState('');
  const [type, setType] = useState<CaseCheck['type']>('state_equals');
  const [first, setFirst] = useState('');
  const [second, setSecond] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async () => {
    setError(null);
    try {
      const check = checkOf(type, first, second);
      await api.createCase(agent, from ? { conversation_id: from, check } : { message, check });
      setFirst('');
      setSecond('');
      setMessage('');
      onMade();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const secondLabel = type === 'state_equals' ? 'Value (JSON or text)' : type === 'db_count' ? 'At least' : type === 'file_contains' ? 'Text' : null;
  const firstLabel = type === 'state_equals' ? 'Key' : type === 'db_count' ? 'SQL (read-only)' : type === 'file_contains' ? 'Path' : type === 'notes_contain' ? 'Text' : 'Tool';
  return (
    <form
      className="case-form"
      aria-label="New case"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <label>
        From conversation
        <select value={from} onChange={(event) => setFrom(event.target.value)}>
          <option value="">— a message instead —</option>
          {(conversations.data ?? []).map((conversation) => (
            <option key={conversation.id} value={conversation.id}>
              {conversation.title}
            </option>
          ))}
        </select>
      </label>
      {!from && (
        <label>
          Case message
          <input value={message} onChange={(event) => setMessage(event.target.value)} />
        </label>
      )}
      <label>
        Check
        <select value={type} onChange={(event) => setType(event.target.value as CaseCheck['type'])}>
          {CHECK_KINDS.map((kind) => (
            <option key={kind.type} value={kind.type}>
              {kind.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        {firstLabel}
        <input value={first} onChange={(event) => setFirst(event.target.value)} />
      </label>
      {secondLabel && (
        <label>
          {secondLabel}
          <input value={second} onChange={(event) => setSecond(event.target.value)} />
        </label>
      )}
      <button type="submit" className="button small" disabled={!first.trim() || (!from && !message.trim())}>
        Make the case
      </button>
      <ErrorAlert error={error} />
    </form>
  );
}

export function Learning({ agent }: { agent: string }) {
  const client = useQueryClient();
  const refresh = () => client.invalidateQueries({ queryKey: learningKey(agent) });
  const rounds = useQuery({
    queryKey: [...learningKey(agent), 'rounds'],
    queryFn: () => api.rounds(agent),
    refetchInterval: (query) => (query.state.data?.some((round) => round.status === 'running') ? 1000 : false),
  });
  // A round that ends changes the items and which cases are training: read them again then.
  const ended = rounds.data?.filter((round) => round.status !== 'running').length ?? 0;
  const items = useQuery({ queryKey: [...learningKey(agent), 'items', ended], queryFn: () => api.learnedItems(agent) });
  const cases = useQuery({ queryKey: [...learningKey(agent), 'cases', ended], queryFn: () => api.cases(agent) });
  const settings = useQuery({ queryKey: [...learningKey(agent), 'settings'], queryFn: () => api.learningSettings(agent) });
  const [open, setOpen] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const act = async (action: () => Promise<unknown>) => {
    setError(null);
    try {
      await action();
      await refresh();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const running = rounds.data?.find((round) => round.status === 'running');
  const shownItems = (items.data ?? []).filter((item) => item.status !== 'candidate');
  return (
    <>
      <ErrorAlert error={error} />
      <section className="admin-card" aria-label="Learning curve">
        <h2>Learning curve</h2>
        <p className="muted">Held-out cases passed after each round (the line marks before it). An item goes live only when replaying the held-out cases shows it helps and breaks none.</p>
        <Curve rounds={rounds.data ?? []} />
        <div className="card-actions">
          <button type="button" className="button primary small" disabled={!!running} onClick={() => void act(() => api.startRound(agent))}>
            Start a learning round
          </button>
          {running && (
            <span role="status">
              Round {running.id}: {running.replays_done} of {running.replays_total} replays
            </span>
          )}
        </div>
        {settings.data && (
          <div className="card-actions">
            <label>
              <input type="checkbox" checked={settings.data.require_approval} onChange={(event) => void act(() => api.setLearningSettings(agent, { ...settings.data!, require_approval: event.target.checked }))} /> Ask me before an item goes live
            </label>
            <label>
              <input type="checkbox" checked={settings.data.nightly} onChange={(event) => void act(() => api.setLearningSettings(agent, { ...settings.data!, nightly: event.target.checked }))} /> Run a round every night
            </label>
          </div>
        )}
      </section>

      <section className="admin-card" aria-label="Learning rounds">
        <h2>Rounds</h2>
        {(rounds.data ?? []).length === 0 ? (
          <p className="muted">No rounds yet.</p>
        ) : (
          <ul className="plain-list">
            {[...(rounds.data ?? [])].reverse().map((round) => (
              <li key={round.id} aria-label={`Round ${round.id}`}>
                <button type="button" className="button ghost small" aria-expanded={open === round.id} onClick={() => setOpen(open === round.id ? null : round.id)}>
                  Round {round.id}
                </button>{' '}
                <span className={`pill ${round.status === 'finished' ? 'pill-success' : round.status === 'failed' ? 'pill-danger' : 'pill-warning'}`}>{round.status}</span>{' '}
                held-out {round.passed_before ?? '—'} → {round.passed_after ?? '—'} of {round.held_out_total}
                {round.error && <span className="muted small"> {round.error}</span>}
                {open === round.id && <RoundDetail agent={agent} id={round.id} />}
              </li>
            ))}
          </ul>
        )}
      </section>

      <section className="admin-card" aria-label="Learned items">
        <h2>Learned items</h2>
        {shownItems.length === 0 ? (
          <p className="muted">Nothing learned yet.</p>
        ) : (
          <table className="schedule-table">
            <thead>
              <tr>
                <th>Item</th>
                <th>Status</th>
                <th>Runs ✓ / ✗</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {shownItems.map((item) => (
                <tr key={item.id} aria-label={`Learned item ${item.id}`}>
                  <td>
                    <strong>{item.kind}</strong> <span className="muted small">v{item.version}</span>
                    {item.read_outside && <span className="pill pill-warning">from outside content</span>}
                    <div className="small">{item.text}</div>
                  </td>
                  <td>
                    <span className={`pill ${STATUS[item.status] ?? ''}`}>{item.status}</span>
                  </td>
                  <td>
                    {item.used_success} / {item.used_failure}
                  </td>
                  <td>
                    <div className="card-actions">
                      {ACTIONS.filter((entry) => entry.when(item)).map((entry) => (
                        <button key={entry.action} type="button" className="button small" onClick={() => void act(() => api.decideItem(agent, item.id, entry.action))}>
                          {entry.label}
                        </button>
                      ))}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section className="admin-card" aria-label="Cases">
        <h2>Cases</h2>
        <p className="muted">A message to replay and a check judged from the data the replay leaves. Held-out cases decide whether an item goes live.</p>
        <ul className="plain-list">
          {(cases.data ?? []).map((item) => (
            <li key={item.id} aria-label={`Case ${item.id}`}>
              <strong>{item.message}</strong> <span className="muted small">{describe(item.check)}</span> <span className="pill">{item.training ? 'training' : 'held-out'}</span>{' '}
              <button type="button" className="button ghost small" onClick={() => void act(() => api.deleteCase(agent, item.id))}>
                Delete
              </button>
            </li>
          ))}
        </ul>
        <NewCaseForm agent={agent} onMade={() => void refresh()} />
      </section>
    </>
  );
}
