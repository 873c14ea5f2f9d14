// The profile of the model an agent's next run uses: which one Wright chose (small local model or
// standard) and why, the settings it decides, and the person's own choice of any of them — kept
// per model on the server, on top of config.toml's `[model_profiles]`.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, type ProfileOverride, type ProfileView } from '../api/client';
import { keys } from '../api/queries';
import { ErrorAlert } from './parts';
import { message } from './Connections';

/** The form's fields as typed: empty means "as the profile decides". */
interface Draft {
  profile: '' | 'small_local' | 'standard';
  temperature: string;
  requireFirstCall: '' | 'yes' | 'no';
  preloadTools: string;
  skillTokens: string;
  replyTokens: string;
  contextTokens: string;
}

function draftOf(saved: ProfileOverride | null | undefined): Draft {
  const text = (value: number | null | undefined) => (value === null || value === undefined ? '' : String(value));
  return {
    profile: saved?.profile ?? '',
    temperature: text(saved?.temperature),
    requireFirstCall: saved?.require_first_call === true ? 'yes' : saved?.require_first_call === false ? 'no' : '',
    preloadTools: text(saved?.preload_tools),
    skillTokens: text(saved?.preload_skill_tokens),
    replyTokens: text(saved?.reply_tokens),
    contextTokens: text(saved?.context_tokens),
  };
}

/** The override to save, or the first field that is not a number. */
function overrideOf(draft: Draft): ProfileOverride | string {
  const number = (label: string, value: string, integer: boolean): number | null | string => {
    if (!value.trim()) return null;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || (integer && !Number.isInteger(parsed))) return `${label} must be ${integer ? 'a whole number' : 'a number'}`;
    return parsed;
  };
  const temperature = number('Temperature', draft.temperature, false);
  const preload = number('Tools sent whole', draft.preloadTools, true);
  const skillTokens = number('Skill budget', draft.skillTokens, true);
  const reply = number('Reply cap', draft.replyTokens, true);
  const context = number('Context budget', draft.contextTokens, true);
  for (const value of [temperature, preload, skillTokens, reply, context]) if (typeof value === 'string') return value;
  return {
    profile: draft.profile || null,
    temperature: temperature as number | null,
    require_first_call: draft.requireFirstCall === '' ? null : draft.requireFirstCall === 'yes',
    preload_tools: preload as number | null,
    preload_skill_tokens: skillTokens as number | null,
    reply_tokens: reply as number | null,
    context_tokens: context as number | null,
  };
}

const PROFILE_NAMES: Record<string, string> = { small_local: 'Small local model', standard: 'Standard' };

/** One agent's model profile: what was chosen and why, and a form to choose by hand. */
export function ProfileCard({ agent }: { agent: string }) {
  const queryClient = useQueryClient();
  const query = useQuery({ queryKey: keys.profile(agent), queryFn: () => api.modelProfile(agent), retry: false });
  const [draft, setDraft] = useState<Draft>(draftOf(null));
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const view = query.data;
  useEffect(() => setDraft(draftOf(view?.saved)), [view?.saved]);
  const done = (result: ProfileView, text: string) => {
    queryClient.setQueryData(keys.profile(agent), result);
    setSaved(text);
    setError(null);
  };
  const save = async () => {
    const override = overrideOf(draft);
    if (typeof override === 'string') {
      setError(override);
      return;
    }
    try {
      done(await api.setModelProfile(agent, override), 'Saved. The next run uses it.');
    } catch (failure) {
      setError(message(failure));
    }
  };
  const reset = async () => {
    try {
      done(await api.clearModelProfile(agent), 'Reset: the chosen profile applies again.');
    } catch (failure) {
      setError(message(failure));
    }
  };
  const title = `Profile of ${agent}'s model`;
  if (query.isError) {
    return (
      <section className="admin-card choice" aria-label={title}>
        <h3>{title}</h3>
        <p className="muted small">{message(query.error)}</p>
      </section>
    );
  }
  if (!view) return <p className="muted">Loading…</p>;
  const field = (key: keyof Draft) => ({
    value: draft[key],
    onChange: (event: { target: { value: string } }) => setDraft({ ...draft, [key]: event.target.value }),
  });
  const settings = view.settings;
  return (
    <section className="admin-card choice" aria-label={title}>
      <h3>{title}</h3>
      <p className="small">
        <strong>{PROFILE_NAMES[view.profile] ?? view.profile}</strong> for <code>{view.model}</code>
      </p>
      <ul className="muted small" aria-label="Why this profile">
        {view.reasons.map((reason) => (
          <li key={reason}>{reason}</li>
        ))}
      </ul>
      <p className="muted small">
        Temperature {settings.temperature ?? 'the server’s'} · first call required {settings.require_first_call ? 'yes' : 'no'} · tools sent whole {settings.preload_tools} · skill budget {settings.preload_skill_tokens} tokens · reply cap {settings.reply_tokens} tokens · context budget{' '}
        {settings.context_tokens ?? 'the whole window'}
      </p>
      <form
        className="choice-form"
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <label>
          Profile
          <select aria-label="Profile" {...field('profile')}>
            <option value="">As chosen</option>
            <option value="small_local">Small local model</option>
            <option value="standard">Standard</option>
          </select>
        </label>
        <label>
          Temperature
          <input aria-label="Temperature" inputMode="decimal" placeholder="as chosen" {...field('temperature')} />
        </label>
        <label>
          First call required
          <select aria-label="First call required" {...field('requireFirstCall')}>
            <option value="">As chosen</option>
            <option value="yes">Yes</option>
            <option value="no">No</option>
          </select>
        </label>
        <label>
          Tools sent whole
          <input aria-label="Tools sent whole" inputMode="numeric" placeholder="as chosen" {...field('preloadTools')} />
        </label>
        <label>
          Skill budget (tokens)
          <input aria-label="Skill budget" inputMode="numeric" placeholder="as chosen" {...field('skillTokens')} />
        </label>
        <label>
          Reply cap (tokens)
          <input aria-label="Reply cap" inputMode="numeric" placeholder="as chosen" {...field('replyTokens')} />
        </label>
        <label>
          Context budget (tokens)
          <input aria-label="Context budget" inputMode="numeric" placeholder="as chosen" {...field('contextTokens')} />
        </label>
        <ErrorAlert error={error} />
        {saved && <p role="status">{saved}</p>}
        <div className="card-actions">
          <button type="submit" className="button primary small">
            Save profile
          </button>
          {view.saved && (
            <button type="button" className="button ghost small" onClick={() => void reset()}>
              Reset
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
