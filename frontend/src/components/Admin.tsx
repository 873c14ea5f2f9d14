// The admin section's frame. Issue 9 fills in each page; until then the sections that the
// API already serves show a read-only view, the rest say what will be there.
import { useEffect, useState } from 'react';
import { api, type DocumentView, type Execution } from '../api/client';
import { Table } from '../blocks/Table';
import { ADMIN_SECTIONS } from './Sidebar';

function Documents({ agent }: { agent: string }) {
  const [docs, setDocs] = useState<{ kind: string; doc: DocumentView | null; error?: string }[] | null>(null);
  useEffect(() => {
    Promise.all(
      (['system_prompt', 'learned_notes'] as const).map((kind) =>
        api.document(agent, kind).then(
          (doc) => ({ kind, doc }),
          (error: Error) => ({ kind, doc: null, error: error.message }),
        ),
      ),
    ).then(setDocs);
  }, [agent]);
  if (!docs) return <div className="loading-line">Loading…</div>;
  return (
    <>
      {docs.map(({ kind, doc }) => (
        <section key={kind} className="admin-card">
          <h2>
            {kind === 'system_prompt' ? 'System prompt' : 'Learned notes'} {doc && <span className="pill">v{doc.version}</span>}
          </h2>
          <pre className="tool-text">{doc?.content || '(empty)'}</pre>
        </section>
      ))}
    </>
  );
}

function Executions({ agent }: { agent: string }) {
  const [rows, setRows] = useState<Execution[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.executions(agent).then(setRows, (failure: Error) => setError(failure.message));
  }, [agent]);
  if (error) return <div className="alert alert-danger">{error}</div>;
  if (!rows) return <div className="loading-line">Loading…</div>;
  return (
    <Table
      columns={[
        { key: 'created_at', label: 'When' },
        { key: 'tool_name', label: 'Tool' },
        { key: 'caller', label: 'Caller' },
        { key: 'result', label: 'Result' },
        { key: 'ms', label: 'ms' },
      ]}
      data={rows.map((row) => ({ created_at: row.created_at, tool_name: row.tool_name, caller: row.caller, result: row.success ? 'ok' : (row.error_category ?? 'error'), ms: Math.round(row.duration_us / 100) / 10 }))}
    />
  );
}

export function Admin({ section, agent }: { section: string; agent: string | null }) {
  const label = ADMIN_SECTIONS.find((entry) => entry.id === section)?.label ?? 'Admin';
  return (
    <div className="admin">
      <header className="workspace-head">
        <h1 className="conversation-title">
          {label}
          {agent && <span className="muted"> · {agent}</span>}
        </h1>
      </header>
      <div className="admin-body">
        {!agent ? (
          <p className="muted">Choose an agent.</p>
        ) : section === 'prompt' ? (
          <Documents agent={agent} />
        ) : section === 'executions' ? (
          <Executions agent={agent} />
        ) : (
          <div className="empty-state">
            <h2>{label}</h2>
            <p className="muted">Inspecting, editing and rolling back {label.toLowerCase()} arrives with the admin pages.</p>
          </div>
        )}
      </div>
    </div>
  );
}
