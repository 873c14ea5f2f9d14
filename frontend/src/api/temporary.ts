// TEMPORARY — a hand-written shape for a field the OpenAPI document does not have yet: the
// optional `component` of a pending render_and_wait call, as the lead's conversation contract
// describes it (the frontend brief: "GET /api/conversations/{id} → {..., pending: [{tool_call_id,
// tool_name, args, created_at, component?: {name, version, compiled_js}}]}"). Delete this file
// when `npm run gen:api` produces it in PendingView, and use the generated type instead.
import type { Pending } from './client';

/** TEMPORARY: the optional `component` of a pending render_and_wait call. */
export interface PendingComponent {
  name: string;
  version: number;
  compiled_js: string;
}

/** TEMPORARY: a pending call as the contract describes it (PendingView + component). */
export type PendingWithComponent = Pending & { component?: PendingComponent | null };
