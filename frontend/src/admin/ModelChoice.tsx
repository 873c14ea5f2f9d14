// The model of one agent, or the default: a connection, a model it lists (or one typed in), its
// tool-call format and context window (react-hook-form, checked by the server's rules in
// connectionSchema.ts; the connection's model list is a query).
import { zodResolver } from '@hookform/resolvers/zod';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import type { z } from 'zod/mini';
import { api, type ListedModel, type ModelChoice, type ProviderConnection } from '../api/client';
import { choiceInput, choiceSchema, type ChoiceFormValues } from './connectionSchema';
import { ErrorAlert } from './parts';
import { message } from './Connections';

/** The model of one agent (`agent`) or of every agent without one (`agent` null). */
export function ChoiceCard({ agent, choice, connections, onChanged }: { agent: string | null; choice: ModelChoice | undefined; connections: ProviderConnection[]; onChanged: () => void }) {
  const title = agent === null ? 'Default model' : `Model of ${agent}`;
  const { register, handleSubmit, watch, setValue, formState } = useForm<ChoiceFormValues, unknown, z.output<typeof choiceSchema>>({
    resolver: zodResolver(choiceSchema),
    defaultValues: { connectionId: choice?.connection_id ?? '', model: choice?.model ?? '', toolCalls: choice?.tool_calls === 'text' ? 'text' : 'native', contextWindow: choice?.context_window ? String(choice.context_window) : '' },
  });
  const connectionId = watch('connectionId');
  const model = watch('model');
  // The models the chosen connection lists, kept per connection in the cache.
  const listing = useQuery({ queryKey: ['connection-models', connectionId], queryFn: () => api.connectionModels(connectionId), enabled: !!connectionId });
  const models: ListedModel[] | null = connectionId ? (listing.data?.models ?? null) : null;
  const [actionError, setError] = useState<string | null>(null);
  const listError = listing.error ? `The model list could not be read: ${listing.error.message}. Type the model's name instead.` : null;
  const error = actionError ?? listError;
  const [saved, setSaved] = useState<string | null>(null);
  const pick = (id: string) => {
    setValue('model', id, { shouldValidate: formState.isSubmitted });
    const listed = models?.find((entry) => entry.id === id);
    if (listed?.context_window) setValue('contextWindow', String(listed.context_window));
  };
  const save = handleSubmit(async (values) => {
    const input = choiceInput(values);
    try {
      const result = agent === null ? await api.setDefaultModel(input) : await api.setAgentModel(agent, input);
      setSaved(`Saved: ${result.model}. The next run uses it.`);
      setError(null);
      onChanged();
    } catch (failure) {
      setError(message(failure));
    }
  });
  const clear = async () => {
    try {
      if (agent === null) await api.clearDefaultModel();
      else await api.clearAgentModel(agent);
      setValue('connectionId', '');
      setValue('model', '');
      setSaved(agent === null ? 'Cleared: agents without their own model use the environment’s.' : 'Cleared: this agent uses the default model.');
      onChanged();
    } catch (failure) {
      setError(message(failure));
    }
  };
  const problem = (field: keyof ChoiceFormValues) => formState.errors[field]?.message;
  return (
    <section className="admin-card choice" aria-label={title}>
      <h3>{title}</h3>
      <p className="muted small">{choice ? `Now: ${choice.model} on ${connections.find((entry) => entry.id === choice.connection_id)?.name ?? choice.connection_id}` : agent === null ? 'Now: the environment’s model, if any.' : 'Now: the default model.'}</p>
      <form className="choice-form" noValidate onSubmit={(event) => void save(event)}>
        <label>
          Connection
          <select aria-label="Connection" {...register('connectionId')}>
            <option value="">Choose a connection</option>
            {connections.map((entry) => (
              <option key={entry.id} value={entry.id}>
                {entry.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Model
          {models && models.length > 0 ? (
            <select aria-label="Model" value={model} onChange={(event) => pick(event.target.value)}>
              <option value="">Choose a model</option>
              {models.map((entry) => (
                <option key={entry.id} value={entry.id}>
                  {entry.id}
                </option>
              ))}
              {model && !models.some((entry) => entry.id === model) && <option value={model}>{model}</option>}
            </select>
          ) : (
            <input aria-label="Model" {...register('model')} placeholder="model name" />
          )}
        </label>
        <label>
          Tool calls
          <select aria-label="Tool calls" {...register('toolCalls')}>
            <option value="native">Native (the API’s own tool calls)</option>
            <option value="text">Text protocol (models without tool calls)</option>
          </select>
        </label>
        <label>
          Context window (tokens)
          <input aria-label="Context window" inputMode="numeric" aria-invalid={!!problem('contextWindow')} placeholder="as the provider says" {...register('contextWindow')} />
          {problem('contextWindow') && <span className="field-error">{problem('contextWindow')}</span>}
        </label>
        <ErrorAlert error={error} />
        {saved && <p role="status">{saved}</p>}
        <div className="card-actions">
          <button type="submit" className="button primary small" disabled={!connectionId || !model.trim()}>
            Save model
          </button>
          {choice && (
            <button type="button" className="button ghost small" onClick={() => void clear()}>
              Clear
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
