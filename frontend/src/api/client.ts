// The HTTP API, typed with the types generated from the server's OpenAPI document
// (`npm run gen:api` → schema.d.ts). Never hand-write API shapes here.
import type { components } from './schema';

export type Schemas = components['schemas'];
export type Agent = Schemas['AgentView'];
export type Conversation = Schemas['ConversationView'];
export type ConversationDetail = Schemas['ConversationDetail'];
export type StoredEvent = Schemas['EventView'];
export type Pending = Schemas['PendingView'];
export type Status = Schemas['StatusView'];
export type Tool = Schemas['ToolView'];
export type Execution = Schemas['ExecutionView'];
export type DocumentView = Schemas['DocumentView'];
export type VersionSummary = Schemas['VersionSummaryView'];
export type ErrorBody = Schemas['ErrorBody'];
export type ComponentSummary = Schemas['ComponentSummary'];
export type ComponentDetail = Schemas['ComponentDetail'];

/** An error answered by the API (`{"error": {code, message}}`) or by the network. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Called on every 401, so the app can go back to the login screen. */
let onUnauthorized: () => void = () => {};
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? { Accept: 'application/json' } : { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'Wright is not reachable. Is `wright serve` running?');
  }
  const text = await response.text();
  let parsed: unknown = undefined;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  if (!response.ok) {
    const error = (parsed as Partial<ErrorBody> | undefined)?.error;
    if (response.status === 401 && !path.startsWith('/api/auth/login')) onUnauthorized();
    throw new ApiError(response.status, error?.code ?? 'http_' + response.status, error?.message ?? response.statusText ?? 'request failed');
  }
  return parsed as T;
}

const enc = encodeURIComponent;

export const api = {
  health: () => request<Schemas['Health']>('GET', '/api/health'),
  login: (token: string) => request<Schemas['Ok']>('POST', '/api/auth/login', { token } satisfies Schemas['LoginRequest']),
  logout: () => request<Schemas['Ok']>('POST', '/api/auth/logout'),
  status: () => request<Status>('GET', '/api/status'),

  agents: () => request<Agent[]>('GET', '/api/agents'),
  createAgent: (body: Schemas['CreateAgent']) => request<Agent>('POST', '/api/agents', body),

  conversations: (agent: string) => request<Conversation[]>('GET', `/api/agents/${enc(agent)}/conversations`),
  createConversation: (agent: string, body: Schemas['CreateConversation'] = {}) =>
    request<Conversation>('POST', `/api/agents/${enc(agent)}/conversations`, body),
  conversation: (id: string) => request<ConversationDetail>('GET', `/api/conversations/${enc(id)}`),
  postMessage: (id: string, text: string) =>
    request<Schemas['Accepted']>('POST', `/api/conversations/${enc(id)}/messages`, { text } satisfies Schemas['PostMessage']),
  cancel: (id: string) => request<Schemas['Accepted']>('POST', `/api/conversations/${enc(id)}/cancel`),
  answerPending: (id: string, toolCallId: string, answer: unknown) =>
    request<Schemas['Accepted']>('POST', `/api/conversations/${enc(id)}/pending/${enc(toolCallId)}`, {
      answer,
    } satisfies Schemas['PendingAnswer']),
  streamUrl: (id: string, after: number) => `/api/conversations/${enc(id)}/stream?after=${after}`,

  stateKeys: (agent: string) => request<Schemas['KeysView']>('GET', `/api/agents/${enc(agent)}/state`),
  getState: (agent: string, key: string) => request<Schemas['ValueView']>('GET', `/api/agents/${enc(agent)}/state/${enc(key)}`),
  /** The body is the JSON value itself. */
  setState: (agent: string, key: string, value: unknown) =>
    request<Schemas['OkView']>('PUT', `/api/agents/${enc(agent)}/state/${enc(key)}`, value),

  document: (agent: string, kind: 'system_prompt' | 'learned_notes') =>
    request<DocumentView>('GET', `/api/agents/${enc(agent)}/documents/${kind}`),
  versions: (agent: string, kind: 'system_prompt' | 'learned_notes') =>
    request<VersionSummary[]>('GET', `/api/agents/${enc(agent)}/documents/${kind}/versions`),

  components: (agent: string) => request<ComponentSummary[]>('GET', `/api/agents/${enc(agent)}/components`),
  component: (agent: string, name: string) => request<ComponentDetail>('GET', `/api/agents/${enc(agent)}/components/${enc(name)}`),

  tools: (agent: string) => request<Tool[]>('GET', `/api/agents/${enc(agent)}/tools`),
  executions: (agent: string) => request<Execution[]>('GET', `/api/agents/${enc(agent)}/executions`),
};
