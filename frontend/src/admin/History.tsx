// The version timeline of one artifact (system prompt, learned notes, a tool, a component):
// who wrote each version and why, a diff between any two chosen versions, and a rollback to
// a version (with a reason) that appends a new version with that content.
import { useCallback, useEffect, useState } from 'react';
import { DiffView } from './DiffView';

export interface VersionEntry {
  version: number;
  author: string;
  reason?: string | null;
  created_at: string;
}

export interface HistorySource {
  versions: () => Promise<VersionEntry[]>;
  diff: (from: number, to: number) => Promise<string>;
  rollback: (version: number, reason: string | null) => Promise<unknown>;
}

export function when(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function History({ title, source, onChanged }: { title: string; source: HistorySource; onChanged?: () => void }) {
  const [versions, setVersions] = useState<VersionEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [from, setFrom] = useState<number | null>(null);
  const [to, setTo] = useState<number | null>(null);
  const [diff, setDiff] = useState<string | null>(null);
  const [rollingBack, setRollingBack] = useState<number | null>(null);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);

  const load = useCallback(async () => {
    try {
      const list = [...(await source.versions())].sort((a, b) => b.version - a.version);
      setVersions(list);
      setError(null);
      // The newest change is what one usually wants to see first.
      if (list.length >= 2) {
        setFrom(list[1].version);
        setTo(list[0].version);
      } else {
        setFrom(null);
        setTo(null);
      }
    } catch (failure) {
      setError((failure as Error).message);
    }
  }, [source]);
  useEffect(() => {
    void load();
  }, [load]);

  useEffect(() => {
    setDiff(null);
    if (from === null || to === null || from === to) return;
    let live = true;
    source.diff(from, to).then(
      (text) => live && setDiff(text),
      (failure: Error) => live && setError(failure.message),
    );
    return () => {
      live = false;
    };
  }, [source, from, to]);

  const confirmRollback = async () => {
    if (rollingBack === null) return;
    setBusy(true);
    try {
      await source.rollback(rollingBack, reason.trim() || null);
      setRollingBack(null);
      setReason('');
      await load();
      onChanged?.();
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  if (!versions) return error ? <div className="alert alert-danger">{error}</div> : <div className="loading-line">Loading history…</div>;
  const current = versions[0]?.version;
  return (
    <div className="history" aria-label={`${title} history`}>
      {error && (
        <div className="alert alert-danger" role="alert">
          {error}
        </div>
      )}
      <ol className="timeline">
        {versions.map((entry) => (
          <li key={entry.version} className="timeline-item" data-version={entry.version}>
            <div className="timeline-main">
              <span className={`pill ${entry.version === current ? 'pill-accent' : ''}`}>v{entry.version}</span>
              <span className={`author author-${entry.author}`}>{entry.author}</span>
              <span className="muted small">{when(entry.created_at)}</span>
              {entry.version === current && <span className="pill">current</span>}
              <span className="timeline-actions">
                <label className="small" title="Diff from this version">
                  <input type="radio" name={`${title}-from`} checked={from === entry.version} onChange={() => setFrom(entry.version)} aria-label={`Diff from v${entry.version}`} /> from
                </label>
                <label className="small" title="Diff to this version">
                  <input type="radio" name={`${title}-to`} checked={to === entry.version} onChange={() => setTo(entry.version)} aria-label={`Diff to v${entry.version}`} /> to
                </label>
                {entry.version !== current && (
                  <button type="button" className="button small" onClick={() => setRollingBack(entry.version)}>
                    Roll back to v{entry.version}
                  </button>
                )}
              </span>
            </div>
            {entry.reason && <div className="timeline-reason">{entry.reason}</div>}
            {rollingBack === entry.version && (
              <form
                className="rollback-form"
                onSubmit={(event) => {
                  event.preventDefault();
                  void confirmRollback();
                }}
              >
                <input value={reason} onChange={(event) => setReason(event.target.value)} placeholder="Why roll back? (optional)" aria-label="Rollback reason" autoFocus />
                <button type="submit" className="button primary small" disabled={busy}>
                  Confirm rollback
                </button>
                <button type="button" className="button ghost small" onClick={() => setRollingBack(null)}>
                  Cancel
                </button>
              </form>
            )}
          </li>
        ))}
      </ol>
      {from !== null && to !== null && from !== to && (diff === null ? <div className="loading-line">Loading diff…</div> : <DiffView diff={diff} label={`v${from} → v${to}`} />)}
    </div>
  );
}
