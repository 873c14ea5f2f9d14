// Server state the pages share, in TanStack Query's cache: loading, errors, retries and refresh
// in one place, keyed so that a change made anywhere refreshes everything that shows it — a new
// conversation, a conversation's status arriving on its live stream, a session started with a
// command, a model picked in Settings. Pages invalidate keys (`invalidate`); none keeps its own
// copy of these lists.
import { QueryClient, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo } from 'react';
import { api, ApiError } from './client';

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // An answer the API gave (a 4xx) is the answer; the network gets three more tries.
      retry: (failures, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && failures < 3,
      refetchOnWindowFocus: true,
      staleTime: 2_000,
    },
  },
});

export const keys = {
  agents: ['agents'] as const,
  /** The model an agent's next run would use (the default agent's without one). */
  status: (agent: string | null) => ['status', agent] as const,
  conversations: (agent: string) => ['conversations', agent] as const,
  sessions: (agent: string) => ['sessions', agent] as const,
  /** Every tool the agent has, with its toolset and approval policy. */
  tools: (agent: string) => ['tools', agent] as const,
  /** The profile of the model an agent's next run would use. */
  profile: (agent: string) => ['profile', agent] as const,
  /** A conversation's finished runs with their outcomes and ratings. */
  outcomes: (conversation: string) => ['outcomes', conversation] as const,
  /** The browsers subscribed to Web Push. */
  devices: ['push-devices'] as const,
  /** Settings: provider connections and the model of each agent and the default. */
  connections: ['connections'] as const,
  modelChoices: ['model-choices'] as const,
  mcpServers: ['mcp-servers'] as const,
  /** Every schedule of the agent, finished ones too. */
  schedules: (agent: string) => ['schedules', agent] as const,
  /** An agent's system prompt or learned notes, and their versions. */
  document: (agent: string, kind: string) => ['document', agent, kind] as const,
  versions: (agent: string, kind: string) => ['versions', agent, kind] as const,
  components: (agent: string) => ['components', agent] as const,
  /** The last week's figures and calls (the Executions page). */
  stats: (agent: string) => ['stats', agent] as const,
  toolSettings: (agent: string) => ['tool-settings', agent] as const,
  /** Memories under every filter start with this key: a change invalidates all of them. */
  memories: (agent: string) => ['memories', agent] as const,
  /** A conversation's detail (events, pending calls); its live stream writes into it. */
  conversation: (id: string) => ['conversation', id] as const,
  /** The tools the agent wrote or installed (the Tools page, a marketplace listing). */
  agentTools: (agent: string) => ['agent-tools', agent] as const,
  listing: (kind: string, name: string) => ['listing', kind, name] as const,
  listings: (query: string) => ['listings', query] as const,
};

/** `settledAt`: the last seq of a settled conversation (-1 while a run goes). A run's outcome is
 * recorded just after it ends, so until one covers `settledAt` the list is read again a few
 * times (a conversation older than outcomes never gets one). */
export function useOutcomes(conversation: string | null, settledAt: number) {
  return useQuery({
    queryKey: [...keys.outcomes(conversation ?? ''), settledAt],
    queryFn: () => api.outcomes(conversation!),
    enabled: conversation !== null && settledAt >= 0,
    refetchInterval: (query) => (query.state.dataUpdateCount < 10 && !query.state.data?.some((run) => run.end_seq >= settledAt) ? 300 : false),
  });
}

/** The agent's own tools; a change anywhere (installed, rolled back, switched) invalidates
 * `keys.agentTools` and `keys.tools` so both pages follow. */
export function useAgentTools(agent: string | null) {
  return useQuery({ queryKey: keys.agentTools(agent ?? ''), queryFn: () => api.agentTools(agent!), enabled: !!agent });
}

export function useAgents() {
  return useQuery({ queryKey: keys.agents, queryFn: () => api.agents() });
}

export function useConversations(agent: string | null) {
  return useQuery({ queryKey: keys.conversations(agent ?? ''), queryFn: () => api.conversations(agent!), enabled: agent !== null });
}

export function useSessions(agent: string | null) {
  return useQuery({ queryKey: keys.sessions(agent ?? ''), queryFn: () => api.sessions(agent!), enabled: agent !== null });
}

/** One list for the Tools, Approvals and Executions pages: a policy set or a toolset switched
 * on one shows on the others. */
export function useTools(agent: string) {
  return useQuery({ queryKey: keys.tools(agent), queryFn: () => api.tools(agent) });
}

export function useAgentStatus(agent: string | null) {
  return useQuery({ queryKey: keys.status(agent), queryFn: () => api.status(agent ?? undefined), enabled: agent !== null });
}

/** Marks what a change may have altered as stale: shown queries fetch again at once. */
export function useInvalidate() {
  const client = useQueryClient();
  // One object per client: callers list it in their hooks' dependencies.
  return useMemo(
    () => ({
    /** The agent's conversation list and sessions: a conversation was made, renamed, archived, ran. */
    conversations: (agent: string) => Promise.all([client.invalidateQueries({ queryKey: keys.conversations(agent) }), client.invalidateQueries({ queryKey: keys.sessions(agent) })]),
    /** Which model each agent would use: connections or model choices changed. */
    status: () => client.invalidateQueries({ queryKey: ['status'] }),
      /** The agent's tools: a toolset switched, a tool installed or removed. */
      tools: (agent: string) => client.invalidateQueries({ queryKey: keys.tools(agent) }),
      /** The agent's schedules: a scheduled run answered or was missed. */
      schedules: (agent: string) => client.invalidateQueries({ queryKey: keys.schedules(agent) }),
      /** The agent's own tools and every tool list: one was installed, updated, removed or rolled back. */
      agentTools: (agent: string) => Promise.all([client.invalidateQueries({ queryKey: keys.agentTools(agent) }), client.invalidateQueries({ queryKey: keys.tools(agent) })]),
    }),
    [client],
  );
}

/** For pages outside the cache's reach (the Settings page, tested on its own): the model each
 * agent would use may have changed. */
export function modelsChanged(): void {
  void queryClient.invalidateQueries({ queryKey: ['status'] });
  void queryClient.invalidateQueries({ queryKey: ['profile'] });
}
