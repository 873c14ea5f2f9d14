// Provider connections on the Settings page: the form that adds or edits one (react-hook-form,
// checked by the server's rules in connectionSchema.ts before it is sent), and a connection's
// card (test it, list its models, edit, remove; the environment's read-only). Keys go to the
// server and never come back: a card shows only whether one is set and its last four characters.
import { zodResolver } from '@hookform/resolvers/zod';
import { useState, type ReactNode } from 'react';
import { useForm } from 'react-hook-form';
import type { z } from 'zod/mini';
import { api, type ConnectionKind, type ConnectionTest, type ListedModel, type ProviderConnection } from '../api/client';
import { connectionInput, connectionSchema, type ConnectionFormValues } from './connectionSchema';
import { ConfirmButtons, ErrorAlert } from './parts';

const KINDS: { kind: ConnectionKind; label: string; placeholder: string }[] = [
  { kind: 'openai', label: 'OpenAI', placeholder: 'https://api.openai.com/v1' },
  { kind: 'anthropic', label: 'Anthropic', placeholder: 'https://api.anthropic.com' },
  { kind: 'gemini', label: 'Google Gemini', placeholder: 'https://generativelanguage.googleapis.com' },
  { kind: 'openai_compatible', label: 'OpenAI-compatible (llama.cpp, vLLM, LM Studio)', placeholder: 'http://127.0.0.1:8080/v1' },
  { kind: 'ollama', label: 'Ollama', placeholder: 'http://127.0.0.1:11434' },
];

function kindLabel(kind: ConnectionKind): string {
  return KINDS.find((entry) => entry.kind === kind)?.label ?? kind;
}

export function message(failure: unknown): string {
  return (failure as Error).message;
}

export function ConnectionForm({ initial, onSaved, onCancel }: { initial?: ProviderConnection; onSaved: () => void; onCancel?: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const form = useForm<ConnectionFormValues, unknown, z.output<typeof connectionSchema>>({
    resolver: zodResolver(connectionSchema),
    defaultValues: { name: initial?.name ?? '', kind: initial?.kind ?? 'openai_compatible', baseUrl: initial?.base_url ?? '', apiKey: '', clearKey: false },
  });
  const { register, handleSubmit, watch, reset, formState } = form;
  const save = handleSubmit(async (values) => {
    try {
      const input = connectionInput(values);
      if (initial) await api.updateConnection(initial.id, input);
      else await api.createConnection(input);
      reset(initial ? { ...values, apiKey: '' } : undefined);
      setError(null);
      onSaved();
    } catch (failure) {
      setError(message(failure));
    }
  });
  const kind = watch('kind');
  const keyHint = initial?.key_set ? `set${initial.key_last_four ? ` (…${initial.key_last_four})` : ''}; leave empty to keep it` : 'none';
  const problem = (field: keyof ConnectionFormValues) => formState.errors[field]?.message;
  return (
    <form className="connection-form" aria-label={initial ? `Edit connection ${initial.name}` : 'Add a connection'} noValidate onSubmit={(event) => void save(event)}>
      <Field label="Name" problem={problem('name')}>
        <input aria-label="Connection name" aria-invalid={!!problem('name')} {...register('name')} />
      </Field>
      <label>
        Provider
        <select aria-label="Provider" {...register('kind')}>
          {KINDS.map((entry) => (
            <option key={entry.kind} value={entry.kind}>
              {entry.label}
            </option>
          ))}
        </select>
      </label>
      <Field label="Base URL" problem={problem('baseUrl')}>
        <input aria-label="Base URL" aria-invalid={!!problem('baseUrl')} placeholder={KINDS.find((entry) => entry.kind === kind)?.placeholder} {...register('baseUrl')} />
      </Field>
      <Field label="API key" problem={problem('apiKey')}>
        <input aria-label="API key" aria-invalid={!!problem('apiKey')} type="password" autoComplete="off" placeholder={keyHint} {...register('apiKey')} />
      </Field>
      {initial?.key_set && (
        <label className="inline">
          <input type="checkbox" {...register('clearKey')} /> Remove the stored key
        </label>
      )}
      <ErrorAlert error={error} />
      <div className="card-actions">
        <button type="submit" className="button primary small" disabled={formState.isSubmitting}>
          {initial ? 'Save connection' : 'Add connection'}
        </button>
        {onCancel && (
          <button type="button" className="button ghost small" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** A labelled field and, under it, what is wrong with it. */
function Field({ label, problem, children }: { label: string; problem?: string; children: ReactNode }) {
  return (
    <label>
      {label}
      {children}
      {problem && <span className="field-error">{problem}</span>}
    </label>
  );
}

export function ConnectionCard({ connection, onChanged }: { connection: ProviderConnection; onChanged: () => void }) {
  const [test, setTest] = useState<ConnectionTest | null>(null);
  const [testing, setTesting] = useState(false);
  const [models, setModels] = useState<ListedModel[] | null>(null);
  const [editing, setEditing] = useState(false);
  const [removing, setRemoving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const runTest = async () => {
    setTesting(true);
    setTest(null);
    try {
      setTest(await api.testConnection(connection.id));
    } catch (failure) {
      setError(message(failure));
    } finally {
      setTesting(false);
    }
  };
  const showModels = async () => {
    try {
      setModels((await api.connectionModels(connection.id)).models);
      setError(null);
    } catch (failure) {
      setError(message(failure));
    }
  };
  const remove = async () => {
    try {
      await api.deleteConnection(connection.id);
      onChanged();
    } catch (failure) {
      setError(message(failure));
    }
  };
  return (
    <section className="admin-card connection" aria-label={`Connection ${connection.name}`}>
      <h3>
        {connection.name} <span className="pill">{kindLabel(connection.kind)}</span>
        {connection.read_only && <span className="pill">read-only</span>}
      </h3>
      <p className="muted small">
        {connection.base_url ?? `${connection.default_base_url} (default)`} · key: {connection.key_set ? `set${connection.key_last_four ? ` (…${connection.key_last_four})` : ''}` : 'none'}
        {connection.variables && <> · from the environment: {connection.variables}</>}
      </p>
      {editing ? (
        <ConnectionForm
          initial={connection}
          onSaved={() => {
            setEditing(false);
            setTest(null);
            onChanged();
          }}
          onCancel={() => setEditing(false)}
        />
      ) : removing ? (
        <ConfirmButtons label={`Remove ${connection.name}`} onConfirm={() => void remove()} onCancel={() => setRemoving(false)} />
      ) : (
        <div className="card-actions">
          <button type="button" className="button small" onClick={() => void runTest()} disabled={testing}>
            {testing ? 'Testing…' : 'Test'}
          </button>
          <button type="button" className="button small" onClick={() => void showModels()}>
            Show models
          </button>
          {!connection.read_only && (
            <>
              <button type="button" className="button ghost small" onClick={() => setEditing(true)}>
                Edit
              </button>
              <button type="button" className="button ghost small" onClick={() => setRemoving(true)}>
                Remove
              </button>
            </>
          )}
        </div>
      )}
      {test?.ok && <p role="status">Connected: the provider lists {test.model_count} models.</p>}
      {test && !test.ok && <ErrorAlert error={`The test failed: ${test.error}`} />}
      <ErrorAlert error={error} />
      {models && (
        <ul className="model-list" aria-label={`Models of ${connection.name}`}>
          {models.map((model) => (
            <li key={model.id}>
              <code>{model.id}</code>
              {model.context_window ? <span className="muted small"> · {model.context_window.toLocaleString()} tokens</span> : null}
            </li>
          ))}
          {models.length === 0 && <li className="muted">The provider lists no models.</li>}
        </ul>
      )}
    </section>
  );
}
