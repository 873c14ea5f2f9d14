// A unified diff (as the API's diff routes answer it) shown line by line: added lines green,
// removed lines red, hunk headers muted, with old and new line numbers in the gutter.
export interface DiffLine {
  kind: 'add' | 'del' | 'ctx' | 'hunk' | 'meta';
  text: string;
  old: number | null;
  new: number | null;
}

export function parseUnifiedDiff(diff: string): DiffLine[] {
  const lines: DiffLine[] = [];
  let oldLine = 0;
  let newLine = 0;
  for (const raw of diff.split('\n')) {
    if (raw === '' && lines.length && diff.endsWith('\n')) continue;
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(raw);
    if (hunk) {
      oldLine = Number(hunk[1]);
      newLine = Number(hunk[2]);
      lines.push({ kind: 'hunk', text: raw, old: null, new: null });
    } else if (raw.startsWith('---') || raw.startsWith('+++') || raw.startsWith('\\')) {
      lines.push({ kind: 'meta', text: raw, old: null, new: null });
    } else if (raw.startsWith('+')) {
      lines.push({ kind: 'add', text: raw.slice(1), old: null, new: newLine++ });
    } else if (raw.startsWith('-')) {
      lines.push({ kind: 'del', text: raw.slice(1), old: oldLine++, new: null });
    } else {
      lines.push({ kind: 'ctx', text: raw.startsWith(' ') ? raw.slice(1) : raw, old: oldLine++, new: newLine++ });
    }
  }
  return lines;
}

const SIGN = { add: '+', del: '−', ctx: ' ', hunk: '', meta: '' } as const;

export function DiffView({ diff, label }: { diff: string; label?: string }) {
  if (!diff.trim()) return <p className="muted small">No differences.</p>;
  const lines = parseUnifiedDiff(diff);
  const added = lines.filter((line) => line.kind === 'add').length;
  const removed = lines.filter((line) => line.kind === 'del').length;
  return (
    <div className="diff" aria-label={label ?? 'Diff'}>
      <div className="diff-head">
        {label && <span>{label}</span>}
        <span className="diff-count-add">+{added}</span>
        <span className="diff-count-del">−{removed}</span>
      </div>
      <table className="diff-table">
        <tbody>
          {lines
            .filter((line) => line.kind !== 'meta')
            .map((line, index) => (
              <tr key={index} className={`diff-${line.kind}`}>
                <td className="diff-num">{line.old ?? ''}</td>
                <td className="diff-num">{line.new ?? ''}</td>
                <td className="diff-sign">{SIGN[line.kind]}</td>
                <td className="diff-text">{line.text}</td>
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}
