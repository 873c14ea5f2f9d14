// TEMPORARY — hand-written shapes for API routes that are not yet in the OpenAPI document.
// They follow the lead's conversation/components contract (the frontend brief, "The
// conversation API ... to this contract"): stored UI components and the `component` field of
// a pending render_and_wait call. Delete each one as soon as `npm run gen:api` produces it
// in schema.d.ts, and import the generated type instead.
import { request, type Pending } from './client';

/** TEMPORARY: `GET /api/agents/{agent}/components` items. */
export interface ComponentSummary {
  name: string;
  description: string;
  version: number;
}

/** TEMPORARY: `GET /api/agents/{agent}/components/{name}`. */
export interface ComponentDetail extends ComponentSummary {
  code: string;
  /** The server-compiled ES module (see src/frame/README.md for what the frame expects). */
  compiled_js: string;
  props_schema: unknown;
}

/** TEMPORARY: the optional `component` of a pending render_and_wait call. */
export interface PendingComponent {
  name: string;
  version: number;
  compiled_js: string;
}

/** TEMPORARY: a pending call as the contract describes it (PendingView + component). */
export type PendingWithComponent = Pending & { component?: PendingComponent | null };

const enc = encodeURIComponent;

export const componentsApi = {
  list: (agent: string) => request<ComponentSummary[]>('GET', `/api/agents/${enc(agent)}/components`),
  get: (agent: string, name: string) => request<ComponentDetail>('GET', `/api/agents/${enc(agent)}/components/${enc(name)}`),
};
