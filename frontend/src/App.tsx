// The app shell: session check, login, navigation, and the page for the current route.
import { lazy, Suspense, useCallback, useEffect, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, ApiError, setUnauthorizedHandler, type Conversation, type Status } from './api/client';
import { keys, useAgents, useAgentStatus, useConversations, useInvalidate, useSessions } from './api/queries';
import { ConversationView } from './components/ConversationView';
import { Login } from './components/Login';
import { Notifications } from './components/Notifications';
import { Sidebar } from './components/Sidebar';
import { navigate, routePath, useRoute } from './router';

// The admin and marketplace pages load on first visit, so the chat's first paint does not wait for them.
const Admin = lazy(() => import('./components/Admin').then((module) => ({ default: module.Admin })));
const Market = lazy(() => import('./components/Market').then((module) => ({ default: module.Market })));

type Session = 'checking' | 'out' | 'in';

export function App() {
  const [session, setSession] = useState<Session>('checking');
  const [status, setStatus] = useState<Status | null>(null);
  const [fatal, setFatal] = useState<string | null>(null);

  const check = useCallback(() => {
    api.status().then(
      (value) => {
        setStatus(value);
        setSession('in');
        setFatal(null);
      },
      (error: ApiError) => {
        if (error.status === 401) setSession('out');
        else setFatal(error.message);
      },
    );
  }, []);
  useEffect(() => {
    setUnauthorizedHandler(() => setSession('out'));
    check();
  }, [check]);

  if (fatal && session === 'checking') {
    return (
      <main className="login">
        <div className="login-card">
          <h1>Wright is not answering</h1>
          <p className="muted">{fatal}</p>
          <button className="button primary" onClick={check}>
            Try again
          </button>
        </div>
      </main>
    );
  }
  if (session === 'checking') return <div className="splash" aria-busy="true" />;
  if (session === 'out') return <Login onLoggedIn={check} />;
  return <Shell status={status} onLogout={() => api.logout().finally(() => setSession('out'))} />;
}

function Shell({ status, onLogout }: { status: Status | null; onLogout: () => void }) {
  const route = useRoute();
  const agentsQuery = useAgents();
  const agents = agentsQuery.data ?? null;
  const [error, setError] = useState<string | null>(null);
  const [menuOpen, setMenuOpen] = useState(false);
  const agent = route.page === 'agent' ? route.agent : route.page === 'admin' ? (route.agent ?? agents?.[0]?.id ?? null) : (agents?.[0]?.id ?? null);
  const conversationsQuery = useConversations(agent);
  const sessionsQuery = useSessions(agent);
  const statusQuery = useAgentStatus(agent);
  const conversations = conversationsQuery.data ?? null;
  const sessions = sessionsQuery.data ?? null;
  // The first answer came with the login check; the agent's own follows.
  const agentStatus = statusQuery.data ?? status;
  const invalidate = useInvalidate();
  const queryClient = useQueryClient();
  const loadError = [agentsQuery, conversationsQuery, sessionsQuery, statusQuery].find((query) => query.error)?.error?.message ?? null;

  // `/` goes to the first agent.
  useEffect(() => {
    if (route.page === 'home' && agents?.length) navigate(routePath({ page: 'agent', agent: agents[0].id, conversation: null }), { replace: true });
  }, [route.page, agents]);

  const refreshConversations = useCallback(() => {
    if (agent) void invalidate.conversations(agent);
  }, [agent, invalidate]);

  const newConversation = useCallback(async () => {
    if (!agent) return;
    try {
      const conversation = await api.createConversation(agent, {});
      queryClient.setQueryData<Conversation[]>(keys.conversations(agent), (current) => [conversation, ...(current ?? [])]);
      // It joined the open session (or one the schedule just started).
      void invalidate.conversations(agent);
      navigate(routePath({ page: 'agent', agent, conversation: conversation.id }));
      setMenuOpen(false);
    } catch (failure) {
      setError((failure as Error).message);
    }
  }, [agent, invalidate, queryClient]);

  // Alt+N: a new conversation, from anywhere.
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.altKey && !event.ctrlKey && !event.metaKey && event.key.toLowerCase() === 'n') {
        event.preventDefault();
        void newConversation();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [newConversation]);

  useEffect(() => setMenuOpen(false), [route]);

  let page;
  if (route.page === 'admin') {
    page = <Admin section={route.section} agent={agent} />;
  } else if (route.page === 'market') {
    page = <Market kind={route.kind} name={route.name} agents={agents ?? []} agent={agent} />;
  } else if (route.page === 'agent' && route.conversation) {
    page = <ConversationView key={route.conversation} agent={route.agent} id={route.conversation} status={agentStatus} onChanged={refreshConversations} />;
  } else if (agents && !agents.length) {
    page = (
      <div className="empty-state">
        <h2>No agents yet</h2>
        <p className="muted">Create one with the API: POST /api/agents.</p>
      </div>
    );
  } else {
    page = (
      <div className="empty-state welcome">
        <h2>{agents?.find((item) => item.id === agent)?.name ?? agent ?? 'Wright'}</h2>
        <p className="muted">Pick a conversation on the left, or start a new one.</p>
        <button type="button" className="button primary" onClick={() => void newConversation()} disabled={!agent}>
          New conversation
        </button>
        <p className="muted small">Shortcuts: Alt+N new conversation · Enter send · Shift+Enter new line · Esc stop the run</p>
      </div>
    );
  }

  return (
    <div className="shell">
      <button type="button" className="menu-button" aria-label="Menu" aria-expanded={menuOpen} onClick={() => setMenuOpen(!menuOpen)}>
        ☰
      </button>
      <Sidebar route={route} agents={agents ?? []} agent={agent} conversations={conversations} sessions={sessions} onSessionsChanged={refreshConversations} onNewConversation={() => void newConversation()} onLogout={onLogout} open={menuOpen} />
      <main className="main">
        {(error ?? loadError) && (
          <div className="alert alert-danger banner" role="alert">
            <span className="alert-icon">⛔</span>
            <div>{error ?? loadError}</div>
            <button className="button ghost small" onClick={() => setError(null)} aria-label="Close">
              ✕
            </button>
          </div>
        )}
        <Suspense fallback={<div className="loading-line pad">Loading…</div>}>{page}</Suspense>
        {agent && <Notifications key={agent} agent={agent} />}
      </main>
    </div>
  );
}
