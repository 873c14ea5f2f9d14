// The form block: text, number, select, checkbox, textarea and date fields, with required
// fields and defaults. Its submit answers the pending call with {action: "submit", data}.
import { useId, useState, type FormEvent } from 'react';
import type { FormField } from './types';

export type FormValues = Record<string, string | boolean>;

/** The starting value of each field: its default, in the form the input holds it. */
export function initialValues(fields: FormField[]): FormValues {
  const values: FormValues = {};
  for (const field of fields) {
    const fallback = field.default;
    if (field.type === 'checkbox') values[field.name] = fallback === true || fallback === 'true';
    else if (field.type === 'select') values[field.name] = fallback !== undefined && fallback !== null ? String(fallback) : field.required ? (field.options?.[0] ?? '') : '';
    else values[field.name] = fallback === undefined || fallback === null ? '' : String(fallback);
  }
  return values;
}

/** Fields that are required and empty (a required checkbox must be ticked). */
export function missingFields(fields: FormField[], values: FormValues): string[] {
  return fields
    .filter((field) => field.required)
    .filter((field) => (field.type === 'checkbox' ? values[field.name] !== true : String(values[field.name] ?? '').trim() === ''))
    .map((field) => field.name);
}

/**
 * The `data` of the answer: numbers as numbers (null when left empty), checkboxes as
 * booleans, dates as `YYYY-MM-DD` strings, everything else as strings.
 */
export function formData(fields: FormField[], values: FormValues): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const field of fields) {
    const value = values[field.name];
    if (field.type === 'checkbox') data[field.name] = value === true;
    else if (field.type === 'number') {
      const text = String(value ?? '').trim();
      data[field.name] = text === '' || !Number.isFinite(Number(text)) ? null : Number(text);
    } else data[field.name] = String(value ?? '');
  }
  return data;
}

export function Form({
  fields,
  submitLabel,
  disabled,
  onSubmit,
}: {
  fields: FormField[];
  submitLabel: string;
  disabled?: boolean;
  onSubmit?: (data: Record<string, unknown>) => void | Promise<void>;
}) {
  const [values, setValues] = useState<FormValues>(() => initialValues(fields));
  const [missing, setMissing] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const baseId = useId();
  const set = (name: string, value: string | boolean) => {
    setValues((current) => ({ ...current, [name]: value }));
    setMissing((current) => current.filter((entry) => entry !== name));
  };
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const empty = missingFields(fields, values);
    setMissing(empty);
    if (empty.length || !onSubmit) return;
    setBusy(true);
    try {
      await onSubmit(formData(fields, values));
    } finally {
      setBusy(false);
    }
  };
  const off = disabled || busy || !onSubmit;
  return (
    <form className="block-form" onSubmit={submit} noValidate>
      {fields.map((field) => {
        const id = `${baseId}-${field.name}`;
        const invalid = missing.includes(field.name);
        const common = { id, name: field.name, disabled: off, required: field.required, 'aria-invalid': invalid || undefined };
        const label = (
          <label htmlFor={id}>
            {field.label}
            {field.required && <span className="required" aria-label="required">*</span>}
          </label>
        );
        if (field.type === 'checkbox') {
          return (
            <div className="field field-checkbox" key={field.name}>
              <input type="checkbox" {...common} checked={values[field.name] === true} onChange={(event) => set(field.name, event.target.checked)} />
              {label}
              {invalid && <div className="field-error">Required</div>}
            </div>
          );
        }
        let control;
        if (field.type === 'textarea') {
          control = <textarea {...common} rows={4} value={String(values[field.name])} onChange={(event) => set(field.name, event.target.value)} />;
        } else if (field.type === 'select') {
          control = (
            <select {...common} value={String(values[field.name])} onChange={(event) => set(field.name, event.target.value)}>
              {!field.required && <option value="">—</option>}
              {(field.options ?? []).map((option) => (
                <option key={option} value={option}>
                  {option}
                </option>
              ))}
            </select>
          );
        } else {
          control = (
            <input
              {...common}
              type={field.type === 'number' ? 'number' : field.type === 'date' ? 'date' : 'text'}
              step={field.type === 'number' ? 'any' : undefined}
              value={String(values[field.name])}
              onChange={(event) => set(field.name, event.target.value)}
            />
          );
        }
        return (
          <div className="field" key={field.name}>
            {label}
            {control}
            {invalid && <div className="field-error">Required</div>}
          </div>
        );
      })}
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={off}>
          {busy ? 'Sending…' : submitLabel || 'Submit'}
        </button>
      </div>
    </form>
  );
}
