// An agent's skills (folders in the Agent Skills layout: SKILL.md and resource files): the list
// with each skill's switch, one skill's SKILL.md and files, an edit with a reason, its version
// timeline with diffs and rollback, delete, and importing a folder from this computer.
import { useCallback, useEffect, useMemo, useState } from 'react';
import { api, type Skill, type SkillSummary } from '../api/client';
import { History, type HistorySource } from './History';
import { ErrorAlert } from './parts';

/** A folder chosen in the browser, as path → text; files that are not UTF-8 text are left out
 * (the server keeps resources as text only) and named. */
async function readFolder(files: FileList): Promise<{ files: Record<string, string>; skipped: string[] }> {
  const read: Record<string, string> = {};
  const skipped: string[] = [];
  const decoder = new TextDecoder('utf-8', { fatal: true });
  for (const file of Array.from(files)) {
    const path = (file as File & { webkitRelativePath?: string }).webkitRelativePath || file.name;
    try {
      read[path] = decoder.decode(await file.arrayBuffer());
    } catch {
      skipped.push(path);
    }
  }
  return { files: read, skipped };
}

function ImportCard({ agent, onImported }: { agent: string; onImported: (name: string) => void }) {
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const choose = async (files: FileList | null) => {
    if (!files?.length) return;
    setError(null);
    try {
      const folder = await readFolder(files);
      const imported = await api.importSkill(agent, folder.files, 'imported in the admin');
      const left = [...folder.skipped, ...imported.skipped];
      setMessage(`Imported ${imported.name} as version ${imported.version}.` + (left.length ? ` Left out: ${left.join(', ')}.` : ''));
      onImported(imported.name);
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <section className="admin-card" aria-label="Import a skill">
      <h2>Import a skill</h2>
      <p className="muted small">
        A folder with <code>SKILL.md</code> (front matter with <code>name</code> and <code>description</code>, then instructions) and optional files. Files are stored as text and never run.
      </p>
      <input
        type="file"
        aria-label="Skill folder"
        multiple
        // A folder picker in Chromium, Firefox and Safari.
        {...({ webkitdirectory: '' } as Record<string, string>)}
        onChange={(event) => void choose(event.target.files)}
      />
      {message && <p className="small">{message}</p>}
      <ErrorAlert error={error} />
    </section>
  );
}

function SkillCard({ agent, name, onChanged }: { agent: string; name: string; onChanged: () => void }) {
  const [skill, setSkill] = useState<Skill | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [draft, setDraft] = useState<string | null>(null);
  const [reason, setReason] = useState('');
  const [generation, setGeneration] = useState(0);
  const refresh = useCallback(() => {
    api.skill(agent, name).then(
      (loaded) => {
        setSkill(loaded);
        setError(null);
      },
      (failure: Error) => setError(failure.message),
    );
  }, [agent, name]);
  useEffect(refresh, [refresh]);
  const changed = () => {
    setGeneration((value) => value + 1);
    refresh();
    onChanged();
  };
  const source = useMemo<HistorySource>(
    () => ({
      versions: () => api.skillVersions(agent, name),
      diff: async (from, to) => (await api.skillDiff(agent, name, from, to)).diff,
      rollback: (version, why) => api.rollbackSkill(agent, name, version, why),
    }),
    [agent, name],
  );
  const act = async (action: () => Promise<unknown>) => {
    try {
      await action();
      setDraft(null);
      setReason('');
      changed();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <section className="admin-card" aria-label={`Skill ${name}`}>
      <h2>
        {name} {skill && <span className="pill">v{skill.version}</span>} {skill && !skill.enabled && <span className="pill">off</span>}
      </h2>
      <ErrorAlert error={error} />
      {skill && (
        <p className="muted small" data-testid="skill-description">
          {skill.description}
        </p>
      )}
      {draft === null ? (
        <>
          <pre className="tool-text doc-content" data-testid="skill-content">
            {skill ? skill.content : '…'}
          </pre>
          {skill && Object.keys(skill.resources).length > 0 && (
            <>
              <div className="sub-label">Files</div>
              {Object.entries(skill.resources).map(([path, text]) => (
                <details key={path}>
                  <summary>
                    <code>{path}</code>
                  </summary>
                  <pre className="code">{text}</pre>
                </details>
              ))}
            </>
          )}
          <div className="card-actions">
            <button type="button" className="button small" onClick={() => setDraft(skill?.content ?? '')} disabled={!skill}>
              Edit
            </button>
            {skill && (
              <button type="button" className="button small" onClick={() => void act(() => api.updateSkill(agent, name, { enabled: !skill.enabled, reason: null }))}>
                {skill.enabled ? 'Switch off' : 'Switch on'}
              </button>
            )}
            <button type="button" className="button ghost small" onClick={() => void act(() => api.deleteSkill(agent, name, 'deleted in the admin'))} disabled={!skill}>
              Delete
            </button>
          </div>
        </>
      ) : (
        <form
          className="doc-edit"
          onSubmit={(event) => {
            event.preventDefault();
            void act(() => api.updateSkill(agent, name, { content: draft, reason: reason.trim() || null }));
          }}
        >
          <textarea aria-label="SKILL.md text" value={draft} onChange={(event) => setDraft(event.target.value)} rows={Math.min(24, Math.max(6, draft.split('\n').length + 1))} />
          <div className="card-actions">
            <input aria-label="Edit reason" placeholder="Why this change? (optional)" value={reason} onChange={(event) => setReason(event.target.value)} />
            <button type="submit" className="button primary small" disabled={draft === skill?.content}>
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
        <History key={generation} title={name} source={source} onChanged={changed} />
      </details>
    </section>
  );
}

export function Skills({ agent }: { agent: string }) {
  const [skills, setSkills] = useState<SkillSummary[] | null>(null);
  const [chosen, setChosen] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = useCallback(() => {
    api.skills(agent).then(setSkills, (failure: Error) => setError(failure.message));
  }, [agent]);
  useEffect(refresh, [refresh]);
  return (
    <>
      <section className="admin-card" aria-label="Skills">
        <h2>Skills</h2>
        <p className="muted small">
          Instructions the agent loads for a kind of task. Switched-on skills are listed to the model, one line each; the agent writes and edits them with its skill tools, and every change is a version
          you can roll back.
        </p>
        <ErrorAlert error={error} />
        {skills === null ? (
          <p className="muted">Loading…</p>
        ) : !skills.length ? (
          <p className="muted small">No skills yet.</p>
        ) : (
          <div className="table-wrap">
            <table className="data-table plain" aria-label="Skill list">
              <thead>
                <tr>
                  <th>Skill</th>
                  <th>What it is for</th>
                  <th>Version</th>
                  <th>State</th>
                </tr>
              </thead>
              <tbody>
                {skills.map((skill) => (
                  <tr key={skill.name}>
                    <td>
                      <button type="button" className="button ghost small" onClick={() => setChosen(skill.name)} aria-pressed={chosen === skill.name}>
                        {skill.name}
                      </button>
                    </td>
                    <td>{skill.description}</td>
                    <td>v{skill.version}</td>
                    <td>{skill.enabled ? 'on' : 'off'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {chosen && <SkillCard key={chosen} agent={agent} name={chosen} onChanged={refresh} />}
      <ImportCard
        agent={agent}
        onImported={(name) => {
          refresh();
          setChosen(name);
        }}
      />
    </>
  );
}
