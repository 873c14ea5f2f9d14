// Collapsible JSON: objects and arrays fold; the first two levels start open.
import { useState } from 'react';

export function JsonView({ data, depth = 0, label }: { data: unknown; depth?: number; label?: string }) {
  const [open, setOpen] = useState(depth < 2);
  const key = label !== undefined ? <span className="json-key">{label}: </span> : null;
  if (data === null || typeof data !== 'object') {
    const kind = data === null ? 'null' : typeof data;
    return (
      <div className="json-line">
        {key}
        <span className={`json-${kind}`}>{typeof data === 'string' ? JSON.stringify(data) : String(data)}</span>
      </div>
    );
  }
  const entries: [string, unknown][] = Array.isArray(data) ? data.map((value, index) => [String(index), value]) : Object.entries(data);
  const [openMark, closeMark] = Array.isArray(data) ? ['[', ']'] : ['{', '}'];
  if (!entries.length) {
    return (
      <div className="json-line">
        {key}
        <span className="json-punct">{openMark + closeMark}</span>
      </div>
    );
  }
  return (
    <div className="json-node">
      <button type="button" className="json-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span className="json-caret" aria-hidden="true">{open ? '▾' : '▸'}</span>
        {key}
        <span className="json-punct">{openMark}</span>
        {!open && <span className="json-summary"> {entries.length} {Array.isArray(data) ? 'items' : 'keys'} {closeMark}</span>}
      </button>
      {open && (
        <div className="json-children">
          {entries.map(([name, value]) => (
            <JsonView key={name} data={value} depth={depth + 1} label={Array.isArray(data) ? undefined : name} />
          ))}
          <span className="json-punct">{closeMark}</span>
        </div>
      )}
    </div>
  );
}
