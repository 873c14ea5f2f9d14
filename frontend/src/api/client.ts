// The HTTP API, typed with the types generated from the server's OpenAPI document
// (`npm run gen:api` → schema.d.ts). Never hand-write API shapes here.
import type { components } from './schema';

export type Schemas = components['schemas'];
export type Agent = Schemas['AgentView'];
export type Conversation = Schemas['ConversationView'];
export type ConversationDetail = Schemas['ConversationDetail'];
/** A stored event: `{seq, content, created_at}` and its body, a union tagged by `kind`. */
export type StoredEvent = Schemas['EventView'];
/** One kind of stored event, narrowed by its `kind` tag. */
export type EventOf<K extends StoredEvent['kind']> = Extract<StoredEvent, { kind: K }>;
export type ToolCallEvent = EventOf<'tool_call'>;
export type ToolResultEvent = EventOf<'tool_result'>;
export type NoticeEvent = EventOf<'notice'>;
export type ConversationStatus = Schemas['ConversationStatus'];
export type Pending = Schemas['PendingView'];
export type Status = Schemas['StatusView'];
export type Tool = Schemas['ToolView'];
export type ToolSettings = Schemas['ToolSettings'];
export type Toolset = Schemas['Toolset'];
export type Execution = Schemas['ExecutionView'];
export type DocumentView = Schemas['DocumentView'];
export type VersionSummary = Schemas['VersionSummaryView'];
export type ErrorBody = Schemas['ErrorBody'];
export type ComponentSummary = Schemas['ComponentSummary'];
export type ComponentDetail = Schemas['ComponentDetail'];
export type AgentTool = Schemas['AgentToolView'];
export type ArtifactVersion = Schemas['ArtifactVersionView'];
export type Stats = Schemas['StatsView'];
export type Listing = Schemas['ListingView'];
export type ListingDetail = Schemas['ListingDetail'];
export type Installed = Schemas['InstalledView'];
export type ProviderConnection = Schemas['ConnectionView'];
export type ConnectionInput = Schemas['ConnectionInput'];
export type ConnectionKind = Schemas['Kind'];
export type ListedModel = Schemas['ModelView'];
export type ConnectionTest = Schemas['TestView'];
export type ModelChoice = Schemas['ChoiceView'];
export type ModelChoices = Schemas['ChoicesView'];
export type ChoiceInput = Schemas['ChoiceInput'];
export type DocumentKind = 'system_prompt' | 'learned_notes';
export type Memory = Schemas['MemoryView'];
export type Session = Schemas['SessionView'];
export type NewSession = Schemas['NewSessionView'];
export type MemoryChange = Schemas['MemoryChangeView'];
export type MemoryLayer = Schemas['MemoryLayer'];
export type McpServer = Schemas['McpServerView'];
/** Which memories the memory page lists; absent ones do not filter. */
export interface MemoryFilter {
  layer?: MemoryLayer;
  archived?: boolean;
  query?: string;
  limit?: number;
}
/** Filters of the execution log; absent ones do not filter. */
export interface ExecutionFilter {
  tool?: string;
  success?: boolean;
  error_category?: string;
  limit?: number;
}

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

function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const pairs = Object.entries(params).filter(([, value]) => value !== undefined && value !== null && value !== '');
  return pairs.length ? '?' + new URLSearchParams(pairs.map(([key, value]) => [key, String(value)])).toString() : '';
}

export const api = {
  health: () => request<Schemas['Health']>('GET', '/api/health'),
  login: (token: string) => request<Schemas['Ok']>('POST', '/api/auth/login', { token } satisfies Schemas['LoginRequest']),
  logout: () => request<Schemas['Ok']>('POST', '/api/auth/logout'),
  /** Whether `agent` (the default agent when absent) has a model for its next run. */
  status: (agent?: string) => request<Status>('GET', '/api/status' + query({ agent })),
  connections: () => request<Schemas['ConnectionsView']>('GET', '/api/settings/connections'),
  createConnection: (input: ConnectionInput) => request<ProviderConnection>('POST', '/api/settings/connections', input),
  updateConnection: (id: string, input: ConnectionInput) => request<ProviderConnection>('PUT', `/api/settings/connections/${enc(id)}`, input),
  deleteConnection: (id: string) => request<Schemas['OkView']>('DELETE', `/api/settings/connections/${enc(id)}`),
  testConnection: (id: string) => request<ConnectionTest>('POST', `/api/settings/connections/${enc(id)}/test`),
  connectionModels: (id: string) => request<Schemas['ModelsView']>('GET', `/api/settings/connections/${enc(id)}/models`),
  /** The MCP servers of `[mcp.servers]` in config.toml and how each is doing. */
  mcpServers: () => request<McpServer[]>('GET', '/api/mcp/servers'),
  modelChoices: () => request<ModelChoices>('GET', '/api/settings/models'),
  setDefaultModel: (input: ChoiceInput) => request<ModelChoice>('PUT', '/api/settings/models/default', input),
  clearDefaultModel: () => request<Schemas['OkView']>('DELETE', '/api/settings/models/default'),
  setAgentModel: (agent: string, input: ChoiceInput) => request<ModelChoice>('PUT', `/api/agents/${enc(agent)}/model`, input),
  clearAgentModel: (agent: string) => request<Schemas['OkView']>('DELETE', `/api/agents/${enc(agent)}/model`),

  agents: () => request<Agent[]>('GET', '/api/agents'),
  createAgent: (body: Schemas['CreateAgent']) => request<Agent>('POST', '/api/agents', body),

  conversations: (agent: string) => request<Conversation[]>('GET', `/api/agents/${enc(agent)}/conversations`),
  createConversation: (agent: string, body: Schemas['CreateConversation'] = {}) =>
    request<Conversation>('POST', `/api/agents/${enc(agent)}/conversations`, body),
  conversation: (id: string) => request<ConversationDetail>('GET', `/api/conversations/${enc(id)}`),
  archivedConversations: (agent: string) => request<Conversation[]>('GET', `/api/agents/${enc(agent)}/conversations/archived`),
  updateConversation: (id: string, change: Schemas['ConversationChange']) => request<Conversation>('PATCH', `/api/conversations/${enc(id)}`, change),
  deleteConversation: (id: string) => request<null>('DELETE', `/api/conversations/${enc(id)}`),
  /** `component` names the canvas component that sends the message for the person (its `sendMessage`). */
  /** A run starts (`Accepted`), or, for `/newsession [name]` typed by the person, a new session and a conversation in it. */
  postMessage: (id: string, text: string, component?: string) =>
    request<Schemas['Accepted'] | NewSession>('POST', `/api/conversations/${enc(id)}/messages`, (component ? { text, component } : { text }) satisfies Schemas['PostMessage']),
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

  document: (agent: string, kind: DocumentKind) => request<DocumentView>('GET', `/api/agents/${enc(agent)}/documents/${kind}`),
  versions: (agent: string, kind: DocumentKind) => request<VersionSummary[]>('GET', `/api/agents/${enc(agent)}/documents/${kind}/versions`),
  documentDiff: (agent: string, kind: DocumentKind, from: number, to: number) =>
    request<Schemas['DiffView']>('GET', `/api/agents/${enc(agent)}/documents/${kind}/diff${query({ from, to })}`),
  editDocument: (agent: string, kind: DocumentKind, body: Schemas['EditRequest']) =>
    request<Schemas['NewVersion']>('POST', `/api/agents/${enc(agent)}/documents/${kind}`, body),
  rollbackDocument: (agent: string, kind: DocumentKind, version: number, reason: string | null) =>
    request<Schemas['NewVersion']>('POST', `/api/agents/${enc(agent)}/documents/${kind}/rollback`, { version, reason } satisfies Schemas['RollbackRequest']),

  sessions: (agent: string) => request<Session[]>('GET', `/api/agents/${enc(agent)}/sessions`),
  startSession: (agent: string, name: string | null) => request<NewSession>('POST', `/api/agents/${enc(agent)}/sessions`, { name } satisfies Schemas['NewSessionRequest']),
  memories: (agent: string, filter: MemoryFilter = {}) => request<Memory[]>('GET', `/api/agents/${enc(agent)}/memories${query({ ...filter })}`),
  createMemory: (agent: string, body: Schemas['NewMemoryRequest']) => request<Memory>('POST', `/api/agents/${enc(agent)}/memories`, body),
  editMemory: (agent: string, id: number, body: Schemas['MemoryEditRequest']) => request<Memory>('PATCH', `/api/agents/${enc(agent)}/memories/${id}`, body),
  forgetMemory: (agent: string, id: number) => request<Memory>('POST', `/api/agents/${enc(agent)}/memories/${id}/forget`),
  restoreMemory: (agent: string, id: number) => request<Memory>('POST', `/api/agents/${enc(agent)}/memories/${id}/restore`),
  memoryHistory: (agent: string, id: number) => request<MemoryChange[]>('GET', `/api/agents/${enc(agent)}/memories/${id}/history`),

  components: (agent: string) => request<ComponentSummary[]>('GET', `/api/agents/${enc(agent)}/components`),
  component: (agent: string, name: string) => request<ComponentDetail>('GET', `/api/agents/${enc(agent)}/components/${enc(name)}`),
  componentVersions: (agent: string, name: string) =>
    request<ArtifactVersion[]>('GET', `/api/agents/${enc(agent)}/components/${enc(name)}/versions`),
  componentDiff: (agent: string, name: string, from: number, to: number) =>
    request<Schemas['DiffText']>('GET', `/api/agents/${enc(agent)}/components/${enc(name)}/diff${query({ from, to })}`),
  rollbackComponent: (agent: string, name: string, version: number, reason: string | null) =>
    request<ComponentSummary>('POST', `/api/agents/${enc(agent)}/components/${enc(name)}/rollback`, { version, reason } satisfies Schemas['RollbackTo']),
  setComponentEnabled: (agent: string, name: string, enabled: boolean) =>
    request<ComponentSummary>('PUT', `/api/agents/${enc(agent)}/components/${enc(name)}/enabled`, { enabled } satisfies Schemas['SetEnabled']),

  tools: (agent: string) => request<Tool[]>('GET', `/api/agents/${enc(agent)}/tools`),
  /** `null` removes the agent's own policy, so the tool's default applies. */
  setToolPolicy: (agent: string, name: string, policy: Schemas['ToolPolicy'] | null) =>
    request<Tool>('PUT', `/api/agents/${enc(agent)}/tools/${enc(name)}/policy`, { policy } satisfies Schemas['PolicyUpdate']),
  toolSettings: (agent: string) => request<ToolSettings>('GET', `/api/agents/${enc(agent)}/tool-settings`),
  setToolSettings: (agent: string, settings: ToolSettings) =>
    request<ToolSettings>('PUT', `/api/agents/${enc(agent)}/tool-settings`, settings),
  invokeTool: (agent: string, name: string, args: unknown) => request<unknown>('POST', `/api/agents/${enc(agent)}/tools/${enc(name)}/invoke`, args),
  agentTools: (agent: string) => request<AgentTool[]>('GET', `/api/agents/${enc(agent)}/agent-tools`),
  agentToolVersions: (agent: string, name: string) =>
    request<ArtifactVersion[]>('GET', `/api/agents/${enc(agent)}/agent-tools/${enc(name)}/versions`),
  agentToolDiff: (agent: string, name: string, from: number, to: number) =>
    request<Schemas['DiffText']>('GET', `/api/agents/${enc(agent)}/agent-tools/${enc(name)}/diff${query({ from, to })}`),
  rollbackAgentTool: (agent: string, name: string, version: number, reason: string | null) =>
    request<AgentTool>('POST', `/api/agents/${enc(agent)}/agent-tools/${enc(name)}/rollback`, { version, reason } satisfies Schemas['RollbackTo']),
  setAgentToolEnabled: (agent: string, name: string, enabled: boolean) =>
    request<AgentTool>('PUT', `/api/agents/${enc(agent)}/agent-tools/${enc(name)}/enabled`, { enabled } satisfies Schemas['SetEnabled']),
  uninstallAgentTool: (agent: string, name: string) =>
    request<Schemas['Uninstalled']>('DELETE', `/api/agents/${enc(agent)}/agent-tools/${enc(name)}/installed`),
  updatePreview: (agent: string, name: string, version?: number) =>
    request<Schemas['UpdatePreviewView']>('GET', `/api/agents/${enc(agent)}/agent-tools/${enc(name)}/update-preview${query({ version })}`),
  updateAgentTool: (agent: string, name: string, version?: number) =>
    request<Installed>('POST', `/api/agents/${enc(agent)}/agent-tools/${enc(name)}/update`, { version: version ?? null } satisfies Schemas['UpdateRequest']),

  executions: (agent: string, filter: ExecutionFilter = {}) =>
    request<Execution[]>('GET', `/api/agents/${enc(agent)}/executions${query({ ...filter })}`),
  stats: (agent: string, days = 7) => request<Stats>('GET', `/api/agents/${enc(agent)}/stats${query({ days })}`),

  listings: (q: string) => request<Listing[]>('GET', `/api/market/listings${query({ q })}`),
  listing: (kind: string, name: string) => request<ListingDetail>('GET', `/api/market/listings/${enc(kind)}/${enc(name)}`),
  exportListing: (kind: string, name: string, version?: number) =>
    request<Schemas['ExportedView']>('GET', `/api/market/listings/${enc(kind)}/${enc(name)}/export${query({ version })}`),
  publish: (body: Schemas['PublishRequest']) => request<Schemas['Published']>('POST', '/api/market/publish', body),
  install: (body: Schemas['InstallRequest']) => request<Installed>('POST', '/api/market/install', body),
  /** The body is the exported file's JSON, as it is. */
  importBundle: (file: unknown) => request<Schemas['Published']>('POST', '/api/market/import', file),
};
