// Small pieces the admin and marketplace pages share.
import type { ReactNode } from 'react';

/** One figure with its caption, in a `.stat-row`. */
export function Stat({ value, label }: { value: ReactNode; label: string }) {
  return (
    <div className="stat">
      <b>{value}</b>
      <span>{label}</span>
    </div>
  );
}

/** A primary action and a Cancel beside it. */
export function ConfirmButtons({ label, onConfirm, onCancel, disabled = false }: { label: string; onConfirm: () => void; onCancel: () => void; disabled?: boolean }) {
  return (
    <div className="card-actions">
      <button type="button" className="button primary small" onClick={onConfirm} disabled={disabled}>
        {label}
      </button>
      <button type="button" className="button ghost small" onClick={onCancel}>
        Cancel
      </button>
    </div>
  );
}

/** An action's error, announced to screen readers; nothing when there is none. */
export function ErrorAlert({ error }: { error: string | null }) {
  if (!error) return null;
  return (
    <div className="alert alert-danger" role="alert">
      {error}
    </div>
  );
}

/** A value as an admin reads it: text as it is, anything else as indented JSON. */
export function pretty(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}
