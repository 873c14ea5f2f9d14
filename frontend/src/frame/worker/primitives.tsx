// The small set of UI primitives a component may use (as globals or `import {...} from "wright"`).
// Styled by runtime/styles.ts with the same colours as the app.
import { Children, type CSSProperties, type ReactNode } from 'react';

type Common = { className?: string; style?: CSSProperties; children?: ReactNode };
const cx = (...names: (string | false | undefined)[]) => names.filter(Boolean).join(' ');

export function Button({ variant = 'default', className, ...rest }: Common & { variant?: 'default' | 'primary' | 'danger' | 'ghost' } & React.ButtonHTMLAttributes<HTMLButtonElement>) {
  return <button type="button" {...rest} className={cx('w-button', `w-button-${variant}`, className)} />;
}

export function Input({ label, className, ...rest }: { label?: string } & React.InputHTMLAttributes<HTMLInputElement>) {
  const input = <input {...rest} className={cx('w-input', className)} />;
  return label ? (
    <label className="w-field">
      <span>{label}</span>
      {input}
    </label>
  ) : (
    input
  );
}

export function TextArea({ label, className, ...rest }: { label?: string } & React.TextareaHTMLAttributes<HTMLTextAreaElement>) {
  const area = <textarea {...rest} className={cx('w-input', className)} />;
  return label ? (
    <label className="w-field">
      <span>{label}</span>
      {area}
    </label>
  ) : (
    area
  );
}

export function Select({ label, options = [], className, ...rest }: { label?: string; options?: (string | { value: string; label: string })[] } & React.SelectHTMLAttributes<HTMLSelectElement>) {
  const select = (
    <select {...rest} className={cx('w-input', className)}>
      {options.map((option) =>
        typeof option === 'string' ? (
          <option key={option} value={option}>
            {option}
          </option>
        ) : (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ),
      )}
      {rest.children}
    </select>
  );
  return label ? (
    <label className="w-field">
      <span>{label}</span>
      {select}
    </label>
  ) : (
    select
  );
}

export function Checkbox({ label, className, ...rest }: { label?: ReactNode } & React.InputHTMLAttributes<HTMLInputElement>) {
  return (
    <label className={cx('w-check', className)}>
      <input type="checkbox" {...rest} />
      {label}
    </label>
  );
}

export function Card({ title, className, style, children }: Common & { title?: ReactNode }) {
  return (
    <section className={cx('w-card', className)} style={style}>
      {title && <h3 className="w-card-title">{title}</h3>}
      {children}
    </section>
  );
}

export function Stack({ gap = 8, direction = 'column', align, className, style, children }: Common & { gap?: number; direction?: 'row' | 'column'; align?: CSSProperties['alignItems'] }) {
  return (
    <div className={cx('w-stack', className)} style={{ display: 'flex', flexDirection: direction, gap, alignItems: align, flexWrap: direction === 'row' ? 'wrap' : undefined, ...style }}>
      {children}
    </div>
  );
}

export function Row(props: Common & { gap?: number; align?: CSSProperties['alignItems'] }) {
  return <Stack direction="row" align={props.align ?? 'center'} {...props} />;
}

export function Text({ muted, size, className, style, children }: Common & { muted?: boolean; size?: 'small' | 'normal' | 'large' }) {
  return <p className={cx('w-text', muted && 'w-muted', size && `w-text-${size}`, className)} style={style}>{children}</p>;
}

export function Heading({ level = 2, className, style, children }: Common & { level?: 1 | 2 | 3 | 4 }) {
  const Tag = `h${level}` as 'h1';
  return <Tag className={cx('w-heading', className)} style={style}>{children}</Tag>;
}

export function Badge({ tone = 'neutral', className, children }: Common & { tone?: 'neutral' | 'info' | 'success' | 'warning' | 'danger' }) {
  return <span className={cx('w-badge', `w-tone-${tone}`, className)}>{children}</span>;
}

export function Alert({ variant = 'info', className, children }: Common & { variant?: 'info' | 'success' | 'warning' | 'danger' }) {
  return <div className={cx('w-alert', `w-tone-${variant}`, className)} role="status">{children}</div>;
}

export function Table({ columns, rows, className }: { columns: ({ key: string; label: string } | string)[]; rows: Record<string, unknown>[]; className?: string }) {
  const cols = columns.map((column) => (typeof column === 'string' ? { key: column, label: column } : column));
  return (
    <table className={cx('w-table', className)}>
      <thead>
        <tr>{cols.map((column) => <th key={column.key}>{column.label}</th>)}</tr>
      </thead>
      <tbody>
        {rows.map((row, index) => (
          <tr key={index}>
            {cols.map((column) => (
              <td key={column.key}>{typeof row[column.key] === 'object' ? JSON.stringify(row[column.key]) : String(row[column.key] ?? '')}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Spinner({ label = 'Loading' }: { label?: string }) {
  return <span className="w-spinner" role="status" aria-label={label} />;
}

export function Divider() {
  return <hr className="w-divider" />;
}

export function Progress({ value, max = 100 }: { value: number; max?: number }) {
  return <progress className="w-progress" value={value} max={max} />;
}

export function List({ items, children }: { items?: ReactNode[]; children?: ReactNode }) {
  return <ul className="w-list">{items ? items.map((item, index) => <li key={index}>{item}</li>) : Children.map(children, (child) => <li>{child}</li>)}</ul>;
}

export const primitives = { Button, Input, TextArea, Textarea: TextArea, Select, Checkbox, Card, Stack, Row, Text, Heading, Badge, Alert, Table, Spinner, Divider, Progress, List };
