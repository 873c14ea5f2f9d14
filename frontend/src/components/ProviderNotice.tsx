import type { Status } from '../api/client';
import { Markdown } from '../blocks/Markdown';
import { navigate, routePath } from '../router';

/** Shown when the agent has no model: a way to the Settings page, and the server's own hint (why, and how). */
export function ProviderNotice({ status }: { status: Status }) {
  if (status.provider) return null;
  return (
    <section className="provider-notice" aria-labelledby="provider-notice-title">
      <h2 id="provider-notice-title">Connect a model to start talking</h2>
      <p>
        <a
          className="button primary small"
          href={routePath({ page: 'admin', section: 'settings', agent: null, rest: [] })}
          onClick={(event) => {
            event.preventDefault();
            navigate(routePath({ page: 'admin', section: 'settings', agent: null, rest: [] }));
          }}
        >
          Open Settings
        </a>
      </p>
      {status.setup_hint ? (
        <Markdown content={status.setup_hint} />
      ) : (
        <p>
          Add a provider connection on the Settings page and pick a model, or restart <code>wright serve</code> with <code>OPENAI_API_KEY</code>, <code>ANTHROPIC_API_KEY</code> or{' '}
          <code>GEMINI_API_KEY</code> in its environment.
        </p>
      )}
      <p className="muted small">Everything else works without a model: your agents' prompts, notes, tools and history.</p>
    </section>
  );
}
