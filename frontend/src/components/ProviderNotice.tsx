import type { Status } from '../api/client';

/** Shown when no model is configured: how to configure one. */
export function ProviderNotice({ status }: { status: Status }) {
  if (status.provider) return null;
  return (
    <section className="provider-notice" aria-labelledby="provider-notice-title">
      <h2 id="provider-notice-title">Connect a model to start talking</h2>
      <p>Wright is running, but no language model is configured. Restart <code>wright serve</code> with one of these in its environment:</p>
      <ul>
        <li>
          <code>OPENAI_API_KEY=…</code> for OpenAI
        </li>
        <li>
          <code>ANTHROPIC_API_KEY=…</code> for Anthropic
        </li>
        <li>
          <code>GEMINI_API_KEY=…</code> for Google Gemini
        </li>
        <li>an OpenAI-compatible server such as a local Ollama (see below)</li>
      </ul>
      <p className="muted small">{status.setup_hint}</p>
      <p className="muted small">Everything else works without a model: your agents' prompts, notes, tools and history.</p>
    </section>
  );
}
