// The parts of a tool's or component's admin card: its heading (name, version, state, origin),
// the enable switch, and the review a person makes before enabling an installed one.
import { ConfirmButtons, pretty } from './parts';

export function Provenance({ value }: { value: unknown }) {
  if (!value || typeof value !== 'object') return <span className="pill">written by the agent</span>;
  const origin = value as { listing?: string; version?: number; hash?: string };
  return (
    <span className="pill pill-accent" title={origin.hash}>
      market: {origin.listing} v{origin.version} · {origin.hash?.slice(0, 12)}
    </span>
  );
}

/** Name, version, enabled state and origin of a tool or component, with its description. */
export function ArtifactHeading({ name, version, enabled, provenance, description }: { name: string; version: number; enabled: boolean; provenance: unknown; description: string }) {
  return (
    <>
      <h2>
        <code>{name}</code> <span className="pill">v{version}</span>
        <span className={`pill ${enabled ? 'pill-success' : 'pill-warning'}`}>{enabled ? 'enabled' : 'disabled'}</span>
        <Provenance value={provenance} />
      </h2>
      <p className="muted">{description}</p>
    </>
  );
}

/** Disable an enabled artifact, or open its review (the only way to enable it). */
export function EnableToggle({ enabled, reviewing, onDisable, onReview }: { enabled: boolean; reviewing: boolean; onDisable: () => void; onReview: () => void }) {
  return enabled ? (
    <button type="button" className="button small" onClick={onDisable}>
      Disable
    </button>
  ) : (
    <button type="button" className="button small primary" onClick={onReview} disabled={reviewing}>
      Review and enable…
    </button>
  );
}

/** What an artifact runs (its schema and code), shown before a person enables it. */
export function ReviewBeforeEnabling({ intro, schemaLabel, schema, code, name, onEnable, onCancel }: { intro: string; schemaLabel: string; schema: unknown; code: string; name: string; onEnable: () => void; onCancel: () => void }) {
  return (
    <div className="review" aria-label="Review before enabling">
      <p className="small">{intro}</p>
      <div className="sub-label">{schemaLabel}</div>
      <pre className="code">{pretty(schema)}</pre>
      <div className="sub-label">Code</div>
      <pre className="code review-code">{code}</pre>
      <ConfirmButtons label={`Enable ${name}`} onConfirm={onEnable} onCancel={onCancel} />
    </div>
  );
}
