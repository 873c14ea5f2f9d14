// The marketplace: search listings and import an exported file; a listing's own page (code,
// schema, stats, versions, install, update, uninstall, export) is components/MarketListing.tsx.
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { keys } from '../api/queries';
import { api, type Agent, type Listing } from '../api/client';
import { navigate, routePath } from '../router';
import { ConfirmButtons, ErrorAlert } from '../admin/parts';
import { ListingPage, pretty, type Bundle } from './MarketListing';

function Import({ onImported }: { onImported: (kind: string, name: string) => void }) {
  const [file, setFile] = useState<{ name: string; json: Record<string, unknown> } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const choose = async (picked: File | undefined) => {
    setError(null);
    setFile(null);
    if (!picked) return;
    try {
      const json = JSON.parse(await picked.text());
      if (!json || typeof json !== 'object' || Array.isArray(json)) throw new Error('not a JSON object');
      setFile({ name: picked.name, json });
    } catch (failure) {
      setError(`${picked.name} is not a bundle file: ${(failure as Error).message}`);
    }
  };
  const bundle = (file?.json.bundle ?? {}) as Bundle;
  const submit = async () => {
    if (!file) return;
    setBusy(true);
    try {
      const published = await api.importBundle(file.json);
      setFile(null);
      onImported(published.kind, published.listing);
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="admin-card" aria-label="Import a bundle">
      <h2>Import a bundle file</h2>
      <input type="file" accept="application/json,.json" aria-label="Bundle file" onChange={(event) => void choose(event.target.files?.[0])} />
      <ErrorAlert error={error} />
      {file && (
        <div className="review" aria-label="Bundle to import">
          <p className="small">
            <b>{bundle.kind ?? '?'}</b> <code>{bundle.name ?? '?'}</code> — {bundle.description}
          </p>
          <div className="sub-label">Hash the file claims</div>
          <code className="hash">{String(file.json.hash ?? '(none)')}</code>
          <div className="sub-label">Code</div>
          <pre className="code">{bundle.code ?? '(none)'}</pre>
          <div className="sub-label">Schema</div>
          <pre className="code">{pretty(bundle.parameter_schema ?? bundle.props_schema)}</pre>
          <p className="muted small">Importing adds it to the marketplace; nothing is installed or enabled.</p>
          <ConfirmButtons label="Import into the marketplace" onConfirm={() => void submit()} disabled={busy} onCancel={() => setFile(null)} />
        </div>
      )}
    </section>
  );
}

function Search() {
  const [q, setQ] = useState('');
  // Asked for once the typing pauses; the last answer stays shown meanwhile.
  const [asked, setAsked] = useState('');
  useEffect(() => {
    const timer = setTimeout(() => setAsked(q.trim()), 150);
    return () => clearTimeout(timer);
  }, [q]);
  const search = useQuery({ queryKey: keys.listings(asked), queryFn: () => api.listings(asked), placeholderData: keepPreviousData });
  const listings: Listing[] | null = search.data ?? null;
  const error = search.error?.message ?? null;
  const open = (kind: string, name: string) => navigate(routePath({ page: 'market', kind, name }));
  return (
    <>
      <input type="search" className="market-search" placeholder="Search tools and components…" aria-label="Search the marketplace" value={q} onChange={(event) => setQ(event.target.value)} />
      {error && <div className="alert alert-danger">{error}</div>}
      {!listings ? (
        <div className="loading-line">Loading…</div>
      ) : !listings.length ? (
        <div className="empty-state">
          <h2>{q ? 'Nothing matches' : 'The marketplace is empty'}</h2>
          <p className="muted">Agents publish tools and components with publish_to_market; you can import a bundle file below.</p>
        </div>
      ) : (
        <div className="market-grid">
          {listings.map((listing) => (
            <button type="button" key={`${listing.kind}/${listing.name}`} className="admin-card listing-card" onClick={() => open(listing.kind, listing.name)} aria-label={`Listing ${listing.name}`}>
              <span>
                <code>{listing.name}</code> <span className="pill">{listing.kind}</span> <span className="pill">v{listing.latest_version}</span>
              </span>
              <span className="muted small">{listing.description}</span>
              <span className="muted small">by {listing.publisher_agent}</span>
            </button>
          ))}
        </div>
      )}
      <Import onImported={open} />
    </>
  );
}

export function Market({ kind, name, agents, agent }: { kind: string | null; name: string | null; agents: Agent[]; agent: string | null }) {
  return (
    <div className="admin">
      <header className="workspace-head">
        <h1 className="conversation-title">
          {kind && name ? (
            <>
              <a href="/market" onClick={(event) => (event.preventDefault(), navigate('/market'))}>
                Marketplace
              </a>
              <span className="muted"> · {name}</span>
            </>
          ) : (
            'Marketplace'
          )}
        </h1>
      </header>
      <div className="admin-body" key={`${kind}/${name}`}>
        {kind && name ? <ListingPage kind={kind} name={name} agents={agents} agent={agent} /> : <Search />}
      </div>
    </div>
  );
}
