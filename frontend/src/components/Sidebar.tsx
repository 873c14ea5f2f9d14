// Navigation: agent switcher, conversations, and the admin section (issue 9's pages live
// under /admin/<section>/<agent>, listed here so they slot in without moving anything).
import { useState } from 'react';
import { api, type Agent, type Conversation, type Session } from '../api/client';
import { navigate, routePath, type Route } from '../router';
import { useTheme, type ThemeChoice } from '../theme';
import { Logo } from './Logo';

export const ADMIN_SECTIONS: { id: string; label: string }[] = [
  { id: 'prompt', label: 'Prompt & notes' },
  { id: 'memory', label: 'Memory' },
  { id: 'tools', label: 'Tools' },
  { id: 'skills', label: 'Skills' },
  { id: 'components', label: 'Components' },
  { id: 'executions', label: 'Executions' },
  { id: 'schedules', label: 'Schedules' },
  { id: 'usage', label: 'Usage' },
  { id: 'learning', label: 'Learning' },
  { id: 'settings', label: 'Settings' },
];

function relative(iso: string): string {
  const then = new Date(iso).getTime();
  if (Number.isNaN(then)) return '';
  const minutes = Math.round((Date.now() - then) / 60_000);
  if (minutes < 1) return 'now';
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours}h`;
  return new Date(iso).toLocaleDateString([], { month: 'short', day: 'numeric' });
}

/** Conversations grouped by the session they began in, newest session first; conversations
 *  older than sessions come last, under "Earlier". Within a group, the list's own order. */
export function groupBySession(conversations: Conversation[], sessions: Session[]): { key: string; label: string; open: boolean; items: Conversation[] }[] {
  const sessionOf = new Map<string, number>();
  for (const session of sessions) for (const id of session.conversation_ids) sessionOf.set(id, session.id);
  const groups = sessions.map((session) => ({
    key: `session-${session.id}`,
    label: session.name,
    open: !session.ended_at,
    items: conversations.filter((conversation) => sessionOf.get(conversation.id) === session.id),
  }));
  const earlier = conversations.filter((conversation) => !sessionOf.has(conversation.id));
  return [...groups.filter((group) => group.items.length > 0 || group.open), ...(earlier.length ? [{ key: 'earlier', label: 'Earlier', open: false, items: earlier }] : [])];
}

/** The archived conversations, on demand, each with a way back into the list. */
function Archived({ agent, onChanged }: { agent: string; onChanged: () => void }) {
  const [archived, setArchived] = useState<Conversation[] | null>(null);
  const load = () => void api.archivedConversations(agent).then(setArchived, () => setArchived([]));
  return (
    <details
      className="archived-conversations"
      onToggle={(event) => {
        if ((event.target as HTMLDetailsElement).open) load();
      }}
    >
      <summary className="sidebar-label">Archived</summary>
      <ul className="conversation-list">
        {archived?.length === 0 && <li className="muted small pad">None.</li>}
        {archived?.map((conversation) => (
          <li key={conversation.id} className="archived-conversation">
            <Link to={routePath({ page: 'agent', agent: conversation.agent_id, conversation: conversation.id })} className="conversation-link">
              <span className="conversation-name">{conversation.title}</span>
            </Link>
            <button
              type="button"
              className="button ghost small"
              onClick={() =>
                void api.updateConversation(conversation.id, { archived: false }).then(() => {
                  load();
                  onChanged();
                })
              }
            >
              Unarchive
            </button>
          </li>
        ))}
      </ul>
    </details>
  );
}

function Link({ to, className, children, current }: { to: string; className?: string; children: React.ReactNode; current?: boolean }) {
  return (
    <a
      href={to}
      className={className}
      aria-current={current ? 'page' : undefined}
      onClick={(event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}

export function Sidebar({
  route,
  agents,
  agent,
  conversations,
  sessions,
  onSessionsChanged,
  onNewConversation,
  onLogout,
  open,
}: {
  route: Route;
  agents: Agent[];
  agent: string | null;
  conversations: Conversation[] | null;
  sessions: Session[] | null;
  onSessionsChanged: () => void;
  onNewConversation: () => void;
  onLogout: () => void;
  open: boolean;
}) {
  const { choice, setChoice } = useTheme();
  const activeConversation = route.page === 'agent' ? route.conversation : null;
  return (
    <nav className={`sidebar ${open ? 'open' : ''}`} aria-label="Main">
      <div className="brand">
        <Logo />
        <span>Wright</span>
      </div>
      <label className="agent-picker">
        <span className="sidebar-label">Agent</span>
        <select value={agent ?? ''} onChange={(event) => navigate(routePath({ page: 'agent', agent: event.target.value, conversation: null }))} aria-label="Agent">
          {agents.map((item) => (
            <option key={item.id} value={item.id}>
              {item.name || item.id}
            </option>
          ))}
        </select>
      </label>
      <button type="button" className="button primary wide" onClick={onNewConversation} disabled={!agent} title="New conversation (Alt+N)">
        + New conversation
      </button>
      <div className="sidebar-label">Conversations</div>
      <div className="session-actions">
        <button
          type="button"
          className="button ghost small"
          disabled={!agent}
          title="End the current session (its session memories end with it) and start a new one; typing /newsession [name] in a chat does the same"
          onClick={() => {
            if (!agent) return;
            void api.startSession(agent, null).then((started) => {
              onSessionsChanged();
              navigate(routePath({ page: 'agent', agent, conversation: started.conversation_id }));
            });
          }}
        >
          + New session
        </button>
      </div>
      <ul className="conversation-list">
        {conversations === null && <li className="muted small pad">Loading…</li>}
        {conversations?.length === 0 && <li className="muted small pad">No conversations yet.</li>}
        {conversations &&
          groupBySession(conversations, sessions ?? []).map((group) => (
            <li key={group.key} className="session-group" aria-label={`Session ${group.label}`}>
              <div className="sidebar-label session-label">
                {group.label}
                {group.open && <span className="pill pill-accent">current</span>}
              </div>
              <ul className="conversation-list session-conversations">
                {group.items.map((conversation) => (
                  <li key={conversation.id}>
                    <Link to={routePath({ page: 'agent', agent: conversation.agent_id, conversation: conversation.id })} className="conversation-link" current={conversation.id === activeConversation}>
                      <span className={`status-dot status-${conversation.status}`} title={conversation.status} />
                      <span className="conversation-name">{conversation.title}</span>
                      <span className="conversation-time">{relative(conversation.updated_at)}</span>
                    </Link>
                  </li>
                ))}
              </ul>
            </li>
          ))}
      </ul>
      {agent && <Archived key={agent} agent={agent} onChanged={onSessionsChanged} />}
      <ul className="admin-list">
        <li>
          <Link to={routePath({ page: 'market', kind: null, name: null })} className="admin-link" current={route.page === 'market'}>
            Marketplace
          </Link>
        </li>
      </ul>
      <div className="sidebar-label">Admin</div>
      <ul className="admin-list">
        {ADMIN_SECTIONS.map((section) => (
          <li key={section.id}>
            <Link
              to={routePath({ page: 'admin', section: section.id, agent, rest: [] })}
              className="admin-link"
              current={route.page === 'admin' && route.section === section.id}
            >
              {section.label}
            </Link>
          </li>
        ))}
      </ul>
      <div className="sidebar-foot">
        <select aria-label="Theme" value={choice} onChange={(event) => setChoice(event.target.value as ThemeChoice)}>
          <option value="system">System theme</option>
          <option value="light">Light</option>
          <option value="dark">Dark</option>
        </select>
        <button type="button" className="button ghost small" onClick={onLogout}>
          Sign out
        </button>
      </div>
    </nav>
  );
}
