// The rules of a provider connection, as the server checks them (`checked` in
// crates/wright-server/src/api/settings.rs): a name of 1 to 100 characters, a base URL that is
// empty or starts with http:// or https://, a key of one line of at most 4096 bytes. The form
// says what is wrong before sending; the server's answer stays the authority. The output is
// the generated `ConnectionInput`, so a field the server adds or renames fails the typecheck.
// zod's mini build: the same checks, a fraction of the bundle (the admin chunk).
import { z } from 'zod/mini';
import type { ChoiceInput, ConnectionInput, ConnectionKind } from '../api/client';

const KINDS = ['openai', 'anthropic', 'gemini', 'openai_compatible', 'ollama'] as const satisfies readonly ConnectionKind[];
// Every kind the server knows is listed: a new one fails here until the form offers it.
type Missing = Exclude<ConnectionKind, (typeof KINDS)[number]>;
export const everyKindListed: [Missing] extends [never] ? true : Missing = true;

export const connectionSchema = z.object({
  name: z.string().check(
    z.trim(),
    z.minLength(1, 'A connection needs a name.'),
    z.refine((name) => [...name].length <= 100, 'At most 100 characters.'),
  ),
  kind: z.enum(KINDS),
  baseUrl: z.string().check(
    z.trim(),
    z.refine((url) => url === '' || url.startsWith('http://') || url.startsWith('https://'), 'The base URL must start with http:// or https://.'),
  ),
  apiKey: z.string().check(
    z.trim(),
    z.refine((key) => new TextEncoder().encode(key).length <= 4096, 'At most 4096 bytes.'),
    // eslint-disable-next-line no-control-regex
    z.refine((key) => !/[\u0000-\u001f\u007f]/.test(key), 'The key must be one line.'),
  ),
  clearKey: z.boolean(),
});

export type ConnectionFormValues = z.input<typeof connectionSchema>;

/** The request body for valid form values. */
export function connectionInput(values: z.output<typeof connectionSchema>): ConnectionInput {
  return { name: values.name, kind: values.kind, base_url: values.baseUrl || null, api_key: values.apiKey || null, clear_api_key: values.clearKey };
}

/** A model choice, as `set_choice` in settings.rs checks it: a connection, a model name, the
 * tool-call format, and a context window that is a positive whole number of tokens (u32) or
 * left to the provider. */
export const choiceSchema = z.object({
  connectionId: z.string().check(z.minLength(1, 'Choose a connection.')),
  model: z.string().check(z.trim(), z.minLength(1, 'Pick a model.')),
  toolCalls: z.enum(['native', 'text'] as const satisfies readonly ChoiceInput['tool_calls'][]),
  contextWindow: z.string().check(
    z.trim(),
    z.refine((text) => text === '' || (/^\d+$/.test(text) && Number(text) >= 1 && Number(text) <= 4_294_967_295), 'A context window is a positive whole number of tokens.'),
  ),
});

export type ChoiceFormValues = z.input<typeof choiceSchema>;

export function choiceInput(values: z.output<typeof choiceSchema>): ChoiceInput {
  return { connection_id: values.connectionId, model: values.model, tool_calls: values.toolCalls, context_window: values.contextWindow ? Number(values.contextWindow) : null };
}
