// The HTTP API through openapi-fetch, typed by the types generated from the server's OpenAPI
// document (`npm run gen:api` → schema.d.ts): each call names a path of the document, and its
// parameters, body and answer are that path's, so a wrong pairing does not compile. Never
// hand-write API shapes here.
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

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
export type ProfileView = Schemas['ProfileView'];
export type ProfileOverride = Schemas['ProfileOverride'];
export type ConnectionTest = Schemas['TestView'];
export type ModelChoice = Schemas['ChoiceView'];
export type ModelChoices = Schemas['ChoicesView'];
export type ChoiceInput = Schemas['ChoiceInput'];
export type DocumentKind = 'system_prompt' | 'learned_notes' | 'db_notes';
export type SkillSummary = Schemas['SkillSummaryView'];
export type Skill = Schemas['SkillView'];
export type Memory = Schemas['MemoryView'];
export type Session = Schemas['SessionView'];
export type NewSession = Schemas['NewSessionView'];
export type MemoryChange = Schemas['MemoryChangeView'];
export type CommandReply = Schemas['CommandReply'];
export type Notification = Schemas['NotificationView'];
export type Schedule = Schemas['ScheduleView'];
export type ScheduleRun = Schemas['ScheduleRunView'];
export type MemoryLayer = Schemas['MemoryLayer'];
export type McpServer = Schemas['McpServerView'];
export type UsageReport = Schemas['UsageReportView'];
export type UsageGrouping = Schemas['GroupingView'];
export type ConversationUsage = Schemas['ConversationUsageView'];
export type Prices = Schemas['PricesView'];
export type Price = Schemas['PriceView'];
export type ScopedBudget = Schemas['ScopedBudgetView'];
export type Budget = Schemas['BudgetView'];
export type RunOutcome = Schemas['RunOutcomeRecord'];
export type Rating = Schemas['Rating'];
export type LearningCase = Schemas['Case'];
export type CaseCheck = Schemas['CaseCheck'];
export type LearningRound = Schemas['Round'];
export type RoundDetail = Schemas['RoundDetail'];
export type LearnedItem = Schemas['LearnedItem'];
export type ItemChange = Schemas['ItemChange'];
export type LearningSettings = Schemas['LearningSettings'];
export type ItemDecision = Schemas['ItemDecision'];
export type PushDevice = Schemas['DeviceView'];
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
  error_category?: ErrorCategory;
  /** Only calls made in this conversation. */
  conversation_id?: string;
  /** Only calls made in the conversations of this session. */
  session_id?: number;
  limit?: number;
}
/** Why a tool call failed: the server's closed set (`wright_core::ErrorCategory`). */
export type ErrorCategory = Schemas['ErrorCategory'];

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

const client = createClient<paths>({
  // Absolute, so that a Request can be made of it outside a page too (the unit tests' jsdom).
  baseUrl: globalThis.location?.origin ?? '',
  headers: { Accept: 'application/json' },
  // The global fetch as it is at call time, with a URL and init (what a test's fake reads).
  fetch: async (request: Request) => {
    const body = request.method === 'GET' || request.method === 'HEAD' ? '' : await request.text();
    return globalThis.fetch(request.url, { method: request.method, headers: request.headers, body: body || undefined, credentials: 'same-origin' });
  },
});

/** What every openapi-fetch call resolves to. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The answer's data, or an ApiError: the API's `{error: {code, message}}`, or the network's. */
async function call<T>(pending: Promise<Answer<T>>): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await pending;
  } catch {
    throw new ApiError(0, 'network', 'Wright is not reachable. Is `wright serve` running?');
  }
  const { response } = answer;
  if (!response.ok) {
    const error = (answer.error as Partial<ErrorBody> | undefined)?.error;
    if (response.status === 401 && !new URL(response.url || 'http://x/').pathname.startsWith('/api/auth/login')) onUnauthorized();
    throw new ApiError(response.status, error?.code ?? 'http_' + response.status, error?.message ?? (response.statusText || 'request failed'));
  }
  return answer.data as T;
}

/** Agent, name and id as path parameters. */
const at = (agent: string) => ({ params: { path: { agent } } });
const named = (agent: string, name: string) => ({ params: { path: { agent, name } } });
const numbered = (agent: string, id: number) => ({ params: { path: { agent, id } } });
const conversationAt = (id: string) => ({ params: { path: { id } } });
/** Only the filters that are set (an empty string is no filter). */
function set<T extends Record<string, unknown>>(params: T): Partial<T> {
  return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined && value !== null && value !== '')) as Partial<T>;
}

export const api = {
  health: () => call(client.GET('/api/health')),
  login: (token: string) => call(client.POST('/api/auth/login', { body: { token } })),
  logout: () => call(client.POST('/api/auth/logout')),
  /** Whether `agent` (the default agent when absent) has a model for its next run. */
  status: (agent?: string) => call(client.GET('/api/status', { params: { query: set({ agent }) } })),
  connections: () => call(client.GET('/api/settings/connections')),
  createConnection: (input: ConnectionInput) => call(client.POST('/api/settings/connections', { body: input })),
  updateConnection: (id: string, input: ConnectionInput) => call(client.PUT('/api/settings/connections/{id}', { params: { path: { id } }, body: input })),
  deleteConnection: (id: string) => call(client.DELETE('/api/settings/connections/{id}', { params: { path: { id } } })),
  testConnection: (id: string) => call(client.POST('/api/settings/connections/{id}/test', { params: { path: { id } } })),
  connectionModels: (id: string) => call(client.GET('/api/settings/connections/{id}/models', { params: { path: { id } } })),
  /** The MCP servers of `[mcp.servers]` in config.toml and how each is doing. */
  mcpServers: () => call(client.GET('/api/mcp/servers')),
  modelChoices: () => call(client.GET('/api/settings/models')),
  setDefaultModel: (input: ChoiceInput) => call(client.PUT('/api/settings/models/default', { body: input })),
  clearDefaultModel: () => call(client.DELETE('/api/settings/models/default')),
  setAgentModel: (agent: string, input: ChoiceInput) => call(client.PUT('/api/agents/{agent}/model', { ...at(agent), body: input })),
  clearAgentModel: (agent: string) => call(client.DELETE('/api/agents/{agent}/model', at(agent))),
  /** The profile the agent's model gets (small local or standard), its settings and why. */
  modelProfile: (agent: string) => call(client.GET('/api/agents/{agent}/model/profile', at(agent))),
  setModelProfile: (agent: string, body: ProfileOverride) => call(client.PUT('/api/agents/{agent}/model/profile', { ...at(agent), body })),
  clearModelProfile: (agent: string) => call(client.DELETE('/api/agents/{agent}/model/profile', at(agent))),

  agents: () => call(client.GET('/api/agents')),
  createAgent: (body: Schemas['CreateAgent']) => call(client.POST('/api/agents', { body })),

  conversations: (agent: string) => call(client.GET('/api/agents/{agent}/conversations', at(agent))),
  createConversation: (agent: string, body: Schemas['CreateConversation'] = {}) => call(client.POST('/api/agents/{agent}/conversations', { ...at(agent), body })),
  conversation: (id: string) => call(client.GET('/api/conversations/{id}', conversationAt(id))),
  archivedConversations: (agent: string) => call(client.GET('/api/agents/{agent}/conversations/archived', at(agent))),
  updateConversation: (id: string, change: Schemas['ConversationChange']) => call(client.PATCH('/api/conversations/{id}', { ...conversationAt(id), body: change })),
  deleteConversation: (id: string) => call(client.DELETE('/api/conversations/{id}', conversationAt(id))),
  /** `component` names the canvas component that sends the message for the person (its `sendMessage`). */
  /** A run starts (`Accepted`); for `/newsession [name]` typed by the person, a new session and a conversation in it;
   * for another command (`/cancel`, `/codestats`, `/codefailures [n]`, `/help`), its answer. */
  postMessage: (id: string, text: string, component?: string) =>
    call(client.POST('/api/conversations/{id}/messages', { ...conversationAt(id), body: component ? { text, component } : { text } })),
  cancel: (id: string) => call(client.POST('/api/conversations/{id}/cancel', conversationAt(id))),
  answerPending: (id: string, toolCallId: string, answer: unknown) =>
    call(client.POST('/api/conversations/{id}/pending/{tool_call_id}', { params: { path: { id, tool_call_id: toolCallId } }, body: { answer } })),
  /** The conversation as a file to save (the session cookie authenticates the download). */
  exportUrl: (id: string, format: Schemas['ExportFormat']) => `/api/conversations/${enc(id)}/export?format=${format}`,
  streamUrl: (id: string, after: number) => `/api/conversations/${enc(id)}/stream?after=${after}`,

  stateKeys: (agent: string) => call(client.GET('/api/agents/{agent}/state', at(agent))),
  getState: (agent: string, key: string) => call(client.GET('/api/agents/{agent}/state/{key}', { params: { path: { agent, key } } })),
  /** The body is the JSON value itself. */
  setState: (agent: string, key: string, value: unknown) => call(client.PUT('/api/agents/{agent}/state/{key}', { params: { path: { agent, key } }, body: value as never })),

  document: (agent: string, kind: DocumentKind) => call(client.GET('/api/agents/{agent}/documents/{kind}', { params: { path: { agent, kind } } })),
  versions: (agent: string, kind: DocumentKind) => call(client.GET('/api/agents/{agent}/documents/{kind}/versions', { params: { path: { agent, kind } } })),
  documentDiff: (agent: string, kind: DocumentKind, from: number, to: number) =>
    call(client.GET('/api/agents/{agent}/documents/{kind}/diff', { params: { path: { agent, kind }, query: { from, to } } })),
  editDocument: (agent: string, kind: DocumentKind, body: Schemas['EditRequest']) => call(client.POST('/api/agents/{agent}/documents/{kind}', { params: { path: { agent, kind } }, body })),
  rollbackDocument: (agent: string, kind: DocumentKind, version: number, reason: string | null) =>
    call(client.POST('/api/agents/{agent}/documents/{kind}/rollback', { params: { path: { agent, kind } }, body: { version, reason } })),

  skills: (agent: string) => call(client.GET('/api/agents/{agent}/skills', at(agent))),
  skill: (agent: string, name: string) => call(client.GET('/api/agents/{agent}/skills/{name}', named(agent, name))),
  createSkill: (agent: string, body: Schemas['CreateSkill']) => call(client.POST('/api/agents/{agent}/skills', { ...at(agent), body })),
  updateSkill: (agent: string, name: string, body: Schemas['UpdateSkill']) => call(client.PUT('/api/agents/{agent}/skills/{name}', { ...named(agent, name), body })),
  deleteSkill: (agent: string, name: string, reason: string | null) =>
    call(client.DELETE('/api/agents/{agent}/skills/{name}', { params: { path: { agent, name }, query: set({ reason: reason ?? undefined }) } })),
  skillVersions: (agent: string, name: string) => call(client.GET('/api/agents/{agent}/skills/{name}/versions', named(agent, name))),
  skillDiff: (agent: string, name: string, from: number, to: number) =>
    call(client.GET('/api/agents/{agent}/skills/{name}/diff', { params: { path: { agent, name }, query: { from, to } } })),
  rollbackSkill: (agent: string, name: string, version: number, reason: string | null) =>
    call(client.POST('/api/agents/{agent}/skills/{name}/rollback', { ...named(agent, name), body: { version, reason } })),
  importSkill: (agent: string, files: Record<string, string>, reason: string | null) =>
    call(client.POST('/api/agents/{agent}/skills/import', { ...at(agent), body: { files, reason } })),
  /** Web Push: the server's VAPID key (404 `push_off` when push is off), the subscribed browsers. */
  pushKey: () => call(client.GET('/api/push/key')),
  pushDevices: () => call(client.GET('/api/push/devices')),
  subscribePush: (body: Schemas['SubscribeRequest']) => call(client.POST('/api/push/devices', { body })),
  removePushDevice: (id: number) => call(client.DELETE('/api/push/devices/{id}', { params: { path: { id } } })),

  notifications: (agent: string) => call(client.GET('/api/agents/{agent}/notifications', at(agent))),
  markNotificationRead: (agent: string, id: number) => call(client.POST('/api/agents/{agent}/notifications/{id}/read', numbered(agent, id))),
  notificationsStreamUrl: (agent: string, after: number) => `/api/agents/${enc(agent)}/notifications/stream?after=${after}`,
  schedules: (agent: string, all = false) => call(client.GET('/api/agents/{agent}/schedules', { params: { path: { agent }, query: set({ all: all || undefined }) } })),
  setSchedulePaused: (agent: string, id: number, paused: boolean) => call(client.PUT('/api/agents/{agent}/schedules/{id}/paused', { ...numbered(agent, id), body: { paused } })),
  deleteSchedule: (agent: string, id: number) => call(client.DELETE('/api/agents/{agent}/schedules/{id}', numbered(agent, id))),
  scheduleRuns: (agent: string, id: number) => call(client.GET('/api/agents/{agent}/schedules/{id}/runs', numbered(agent, id))),

  usage: (by: UsageGrouping, since?: string) => call(client.GET('/api/usage', { params: { query: set({ by, since }) } })),
  usageExportUrl: (since?: string) => `/api/usage/export${since ? `?since=${enc(since)}` : ''}`,
  conversationUsage: (id: string) => call(client.GET('/api/conversations/{id}/usage', { params: { path: { id } } })),
  prices: () => call(client.GET('/api/settings/prices')),
  setPrice: (body: Price) => call(client.PUT('/api/settings/prices', { body })),
  budgets: () => call(client.GET('/api/settings/budgets')),
  setBudget: (scope: string, body: Budget) => call(client.PUT('/api/settings/budgets/{scope}', { params: { path: { scope } }, body })),
  outcomes: (conversation: string) => call(client.GET('/api/conversations/{id}/outcomes', { params: { path: { id: conversation } } })),
  /** Rates the run that gave the answer at `seq`. */
  feedback: (conversation: string, rating: Rating, seq: number, comment: string | null = null) =>
    call(client.POST('/api/conversations/{id}/feedback', { params: { path: { id: conversation } }, body: { rating, seq, comment } })),
  cases: (agent: string) => call(client.GET('/api/agents/{agent}/cases', at(agent))),
  createCase: (agent: string, body: Schemas['NewCase']) => call(client.POST('/api/agents/{agent}/cases', { ...at(agent), body })),
  deleteCase: (agent: string, id: number) => call(client.DELETE('/api/agents/{agent}/cases/{id}', numbered(agent, id))),
  rounds: (agent: string) => call(client.GET('/api/agents/{agent}/learning/rounds', at(agent))),
  startRound: (agent: string) => call(client.POST('/api/agents/{agent}/learning/rounds', at(agent))),
  round: (agent: string, id: number) => call(client.GET('/api/agents/{agent}/learning/rounds/{id}', numbered(agent, id))),
  learnedItems: (agent: string) => call(client.GET('/api/agents/{agent}/learning/items', at(agent))),
  decideItem: (agent: string, id: number, action: ItemDecision) =>
    call(client.POST('/api/agents/{agent}/learning/items/{id}/decision', { ...numbered(agent, id), body: { action } })),
  learningSettings: (agent: string) => call(client.GET('/api/agents/{agent}/learning/settings', at(agent))),
  setLearningSettings: (agent: string, settings: LearningSettings) => call(client.PUT('/api/agents/{agent}/learning/settings', { ...at(agent), body: settings })),

  sessions: (agent: string) => call(client.GET('/api/agents/{agent}/sessions', at(agent))),
  startSession: (agent: string, name: string | null) => call(client.POST('/api/agents/{agent}/sessions', { ...at(agent), body: { name } })),
  memories: (agent: string, filter: MemoryFilter = {}) => call(client.GET('/api/agents/{agent}/memories', { params: { path: { agent }, query: set({ ...filter }) } })),
  createMemory: (agent: string, body: Schemas['NewMemoryRequest']) => call(client.POST('/api/agents/{agent}/memories', { ...at(agent), body })),
  editMemory: (agent: string, id: number, body: Schemas['MemoryEditRequest']) => call(client.PATCH('/api/agents/{agent}/memories/{id}', { ...numbered(agent, id), body })),
  forgetMemory: (agent: string, id: number) => call(client.POST('/api/agents/{agent}/memories/{id}/forget', numbered(agent, id))),
  restoreMemory: (agent: string, id: number) => call(client.POST('/api/agents/{agent}/memories/{id}/restore', numbered(agent, id))),
  memoryHistory: (agent: string, id: number) => call(client.GET('/api/agents/{agent}/memories/{id}/history', numbered(agent, id))),

  components: (agent: string) => call(client.GET('/api/agents/{agent}/components', at(agent))),
  component: (agent: string, name: string) => call(client.GET('/api/agents/{agent}/components/{name}', named(agent, name))),
  componentVersions: (agent: string, name: string) => call(client.GET('/api/agents/{agent}/components/{name}/versions', named(agent, name))),
  componentDiff: (agent: string, name: string, from: number, to: number) =>
    call(client.GET('/api/agents/{agent}/components/{name}/diff', { params: { path: { agent, name }, query: { from, to } } })),
  rollbackComponent: (agent: string, name: string, version: number, reason: string | null) =>
    call(client.POST('/api/agents/{agent}/components/{name}/rollback', { ...named(agent, name), body: { version, reason } })),
  setComponentEnabled: (agent: string, name: string, enabled: boolean) => call(client.PUT('/api/agents/{agent}/components/{name}/enabled', { ...named(agent, name), body: { enabled } })),

  tools: (agent: string) => call(client.GET('/api/agents/{agent}/tools', at(agent))),
  /** `null` removes the agent's own policy, so the tool's default applies. */
  setToolPolicy: (agent: string, name: string, policy: Schemas['ToolPolicy'] | null) => call(client.PUT('/api/agents/{agent}/tools/{name}/policy', { ...named(agent, name), body: { policy } })),
  toolSettings: (agent: string) => call(client.GET('/api/agents/{agent}/tool-settings', at(agent))),
  setToolSettings: (agent: string, settings: ToolSettings) => call(client.PUT('/api/agents/{agent}/tool-settings', { ...at(agent), body: settings })),
  invokeTool: (agent: string, name: string, args: unknown) => call(client.POST('/api/agents/{agent}/tools/{name}/invoke', { ...named(agent, name), body: args as never })),
  agentTools: (agent: string) => call(client.GET('/api/agents/{agent}/agent-tools', at(agent))),
  agentToolVersions: (agent: string, name: string) => call(client.GET('/api/agents/{agent}/agent-tools/{name}/versions', named(agent, name))),
  agentToolDiff: (agent: string, name: string, from: number, to: number) =>
    call(client.GET('/api/agents/{agent}/agent-tools/{name}/diff', { params: { path: { agent, name }, query: { from, to } } })),
  rollbackAgentTool: (agent: string, name: string, version: number, reason: string | null) =>
    call(client.POST('/api/agents/{agent}/agent-tools/{name}/rollback', { ...named(agent, name), body: { version, reason } })),
  setAgentToolEnabled: (agent: string, name: string, enabled: boolean) => call(client.PUT('/api/agents/{agent}/agent-tools/{name}/enabled', { ...named(agent, name), body: { enabled } })),
  uninstallAgentTool: (agent: string, name: string) => call(client.DELETE('/api/agents/{agent}/agent-tools/{name}/installed', named(agent, name))),
  updatePreview: (agent: string, name: string, version?: number) =>
    call(client.GET('/api/agents/{agent}/agent-tools/{name}/update-preview', { params: { path: { agent, name }, query: set({ version }) } })),
  updateAgentTool: (agent: string, name: string, version?: number) =>
    call(client.POST('/api/agents/{agent}/agent-tools/{name}/update', { ...named(agent, name), body: { version: version ?? null } })),

  executions: (agent: string, filter: ExecutionFilter = {}) => call(client.GET('/api/agents/{agent}/executions', { params: { path: { agent }, query: set({ ...filter }) } })),
  stats: (agent: string, days = 7) => call(client.GET('/api/agents/{agent}/stats', { params: { path: { agent }, query: { days } } })),

  listings: (q: string) => call(client.GET('/api/market/listings', { params: { query: set({ q }) } })),
  listing: (kind: string, name: string) => call(client.GET('/api/market/listings/{kind}/{name}', { params: { path: { kind, name } } })),
  exportListing: (kind: string, name: string, version?: number) =>
    call(client.GET('/api/market/listings/{kind}/{name}/export', { params: { path: { kind, name }, query: set({ version }) } })),
  publish: (body: Schemas['PublishRequest']) => call(client.POST('/api/market/publish', { body })),
  install: (body: Schemas['InstallRequest']) => call(client.POST('/api/market/install', { body })),
  /** The body is the exported file's JSON, as it is. */
  importBundle: (file: unknown) => call(client.POST('/api/market/import', { body: file as never })),
};

const enc = encodeURIComponent;
