import type { Status } from '../api/client';
import { Markdown } from '../blocks/Markdown';

/** Shown when no model is configured: how to configure one (the server's own hint). */
export function ProviderNotice({ status }: { status: Status }) {
  if (status.provider) return null;
  return (
    <section className="provider-notice" aria-labelledby="provider-notice-title">
      <h2 id="provider-notice-title">Connect a model to start talking</h2>
      {status.setup_hint ? (
        <Markdown content={status.setup_hint} />
      ) : (
        <p>
          Restart <code>wright serve</code> with <code>OPENAI_API_KEY</code>, <code>ANTHROPIC_API_KEY</code> or <code>GEMINI_API_KEY</code> in its environment, or point it at an
          OpenAI-compatible server such as a local Ollama.
        </p>
      )}
      <p className="muted small">Everything else works without a model: your agents' prompts, notes, tools and history.</p>
    </section>
  );
}
