// Navigation: agent switcher, conversations, and the admin section (issue 9's pages live
// under /admin/<section>/<agent>, listed here so they slot in without moving anything).
import type { Agent, Conversation } from '../api/client';
import { navigate, routePath, type Route } from '../router';
import { useTheme, type ThemeChoice } from '../theme';
import { Logo } from './Logo';

export const ADMIN_SECTIONS: { id: string; label: string }[] = [
  { id: 'prompt', label: 'Prompt & notes' },
  { id: 'tools', label: 'Tools' },
  { id: 'components', label: 'Components' },
  { id: 'executions', label: 'Executions' },
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
  onNewConversation,
  onLogout,
  open,
}: {
  route: Route;
  agents: Agent[];
  agent: string | null;
  conversations: Conversation[] | null;
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
      <ul className="conversation-list">
        {conversations === null && <li className="muted small pad">Loading…</li>}
        {conversations?.length === 0 && <li className="muted small pad">No conversations yet.</li>}
        {conversations?.map((conversation) => (
          <li key={conversation.id}>
            <Link to={routePath({ page: 'agent', agent: conversation.agent_id, conversation: conversation.id })} className="conversation-link" current={conversation.id === activeConversation}>
              <span className={`status-dot status-${conversation.status}`} title={conversation.status} />
              <span className="conversation-name">{conversation.title}</span>
              <span className="conversation-time">{relative(conversation.updated_at)}</span>
            </Link>
          </li>
        ))}
      </ul>
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
