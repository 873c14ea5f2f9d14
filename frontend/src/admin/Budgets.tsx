// On the Settings page: the usage budgets (all agents, and per agent) and the prices of
// models. A budget set here takes the place of config.toml's `[budget]` or
// `[agents.<id>.budget]` for its scope; a price set here is used for requests from now on
// (the past keeps the cost it was recorded with).
import { useCallback, useEffect, useState } from 'react';
import { api, type Budget, type Price, type Prices, type ScopedBudget } from '../api/client';
import { ErrorAlert } from './parts';

const FIELDS: { key: keyof Budget; label: string; step: string }[] = [
  { key: 'tokens_per_day', label: 'Tokens per day', step: '1' },
  { key: 'tokens_per_month', label: 'Tokens per month', step: '1' },
  { key: 'usd_per_day', label: 'USD per day', step: '0.01' },
  { key: 'usd_per_month', label: 'USD per month', step: '0.01' },
  { key: 'notify_at_percent', label: 'Notify at %', step: '1' },
];

function BudgetRow({ scoped, onSaved }: { scoped: ScopedBudget; onSaved: () => void }) {
  const [draft, setDraft] = useState<Record<string, string>>(() =>
    Object.fromEntries(FIELDS.map(({ key }) => [key, scoped.budget[key] == null ? '' : String(scoped.budget[key])])),
  );
  const [error, setError] = useState<string | null>(null);
  const save = async () => {
    setError(null);
    const number = (key: keyof Budget) => (draft[key]?.trim() ? Number(draft[key]) : null);
    try {
      await api.setBudget(scoped.scope, {
        tokens_per_day: number('tokens_per_day'),
        tokens_per_month: number('tokens_per_month'),
        usd_per_day: number('usd_per_day'),
        usd_per_month: number('usd_per_month'),
        notify_at_percent: number('notify_at_percent'),
      });
      onSaved();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <tr>
      <td>
        {scoped.scope === 'all' ? 'All agents' : scoped.scope}
        <div className="muted">{scoped.source === 'config' ? 'from config.toml' : 'set here'}</div>
      </td>
      {FIELDS.map(({ key, label, step }) => (
        <td key={key}>
          <input
            type="number"
            min="0"
            step={step}
            aria-label={`${label} (${scoped.scope})`}
            placeholder="no limit"
            value={draft[key] ?? ''}
            onChange={(event) => setDraft({ ...draft, [key]: event.target.value })}
          />
        </td>
      ))}
      <td>
        <button type="button" className="button" onClick={() => void save()}>
          Save
        </button>
        <ErrorAlert error={error} />
      </td>
    </tr>
  );
}

export function Budgets() {
  const [budgets, setBudgets] = useState<ScopedBudget[] | null>(null);
  const [agent, setAgent] = useState('');
  const [error, setError] = useState<string | null>(null);
  const refresh = useCallback(() => {
    api.budgets().then(setBudgets, (failure: Error) => setError(failure.message));
  }, []);
  useEffect(refresh, [refresh]);
  const shown: ScopedBudget[] = budgets ?? [];
  const withAll = shown.some((scoped) => scoped.scope === 'all') ? shown : [{ scope: 'all', source: 'config', budget: {} }, ...shown];
  return (
    <section className="card" aria-label="Budgets">
      <h2>Budgets</h2>
      <p className="muted">
        Limits on what model requests spend, per UTC day and month. Each request is checked before it is sent against what is spent
        plus its prompt and output cap; a request that would pass a budget is not sent, and you are told once. Empty: no limit.
      </p>
      <ErrorAlert error={error} />
      <table className="budget-table">
        <thead>
          <tr>
            <th>Scope</th>
            {FIELDS.map(({ key, label }) => (
              <th key={key}>{label}</th>
            ))}
            <th />
          </tr>
        </thead>
        <tbody>
          {withAll.map((scoped) => (
            <BudgetRow key={`${scoped.scope}/${scoped.source}`} scoped={scoped} onSaved={refresh} />
          ))}
        </tbody>
      </table>
      <div className="usage-chart-controls">
        <input aria-label="Agent for a new budget" placeholder="agent id" value={agent} onChange={(event) => setAgent(event.target.value)} />
        <button
          type="button"
          className="button"
          disabled={!agent.trim() || withAll.some((scoped) => scoped.scope === agent.trim())}
          onClick={() => {
            setBudgets([...shown, { scope: agent.trim(), source: 'settings', budget: {} }]);
            setAgent('');
          }}
        >
          Add an agent's budget
        </button>
      </div>
    </section>
  );
}

const EMPTY_PRICE: Price = { connection: '', model: '', input_per_mtok: 0, cached_input_per_mtok: 0, output_per_mtok: 0 };

export function PricesCard() {
  const [prices, setPrices] = useState<Prices | null>(null);
  const [draft, setDraft] = useState<Price>(EMPTY_PRICE);
  const [error, setError] = useState<string | null>(null);
  const refresh = useCallback(() => {
    api.prices().then(setPrices, (failure: Error) => setError(failure.message));
  }, []);
  useEffect(refresh, [refresh]);
  const save = async () => {
    setError(null);
    try {
      await api.setPrice(draft);
      setDraft(EMPTY_PRICE);
      refresh();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const number = (key: 'input_per_mtok' | 'cached_input_per_mtok' | 'output_per_mtok', label: string) => (
    <input type="number" min="0" step="0.001" aria-label={label} value={draft[key]} onChange={(event) => setDraft({ ...draft, [key]: Number(event.target.value) })} />
  );
  return (
    <section className="card" aria-label="Prices">
      <h2>Prices</h2>
      <p className="muted">
        Dollars per million tokens. Hosted models use the vendor's list price below unless you set one for a connection and model;
        local servers cost nothing unless set. A change applies to requests from now on.
      </p>
      <ErrorAlert error={error} />
      <table className="price-table">
        <thead>
          <tr>
            <th>Connection</th>
            <th>Model</th>
            <th>Input</th>
            <th>Cached input</th>
            <th>Output</th>
          </tr>
        </thead>
        <tbody>
          {prices?.set.map((price) => (
            <tr key={`${price.connection}/${price.model}`}>
              <td>{price.connection}</td>
              <td>{price.model}</td>
              <td>{price.input_per_mtok}</td>
              <td>{price.cached_input_per_mtok}</td>
              <td>{price.output_per_mtok}</td>
            </tr>
          ))}
          <tr>
            <td>
              <input aria-label="Price connection" placeholder="connection id" value={draft.connection} onChange={(event) => setDraft({ ...draft, connection: event.target.value })} />
            </td>
            <td>
              <input aria-label="Price model" placeholder="model" value={draft.model} onChange={(event) => setDraft({ ...draft, model: event.target.value })} />
            </td>
            <td>{number('input_per_mtok', 'Input price')}</td>
            <td>{number('cached_input_per_mtok', 'Cached input price')}</td>
            <td>
              {number('output_per_mtok', 'Output price')}{' '}
              <button type="button" className="button" disabled={!draft.connection.trim() || !draft.model.trim()} onClick={() => void save()}>
                Set price
              </button>
            </td>
          </tr>
        </tbody>
      </table>
      <details>
        <summary>List prices of hosted models</summary>
        <table className="price-table">
          <tbody>
            {prices?.defaults.map((price) => (
              <tr key={`${price.vendor}/${price.model_prefix}`}>
                <td>{price.vendor}</td>
                <td>{price.model_prefix}*</td>
                <td>{price.input_per_mtok}</td>
                <td>{price.cached_input_per_mtok}</td>
                <td>{price.output_per_mtok}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </section>
  );
}
