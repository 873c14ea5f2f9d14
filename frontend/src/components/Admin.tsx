// The admin section, per agent: the system prompt, learned notes and database notes
// (admin/Documents.tsx), the skills (admin/Skills.tsx), the
// agent's memory, tools and toolsets (admin/Tools.tsx) and UI components (admin/Components.tsx),
// each with its version timeline, diffs and rollback; the tool execution log with filters, the
// latest failures and the last 7 days' statistics (admin/Executions.tsx); the agent's schedules
// (admin/Schedules.tsx); what it learned, proven by replay (admin/Learning.tsx); and the
// installation's Settings (provider connections and models, admin/Settings.tsx, with budgets and
// prices, admin/Budgets.tsx; the MCP servers' states, admin/McpServers.tsx); and the
// installation's usage and cost (admin/Usage.tsx). One module per page; this
// one only picks the page.
import { ADMIN_SECTIONS } from './Sidebar';
import { Components } from '../admin/Components';
import { DocumentCard } from '../admin/Documents';
import { Executions } from '../admin/Executions';
import { Learning } from '../admin/Learning';
import { McpServers } from '../admin/McpServers';
import { Memories } from '../admin/Memory';
import { Schedules } from '../admin/Schedules';
import { Settings } from '../admin/Settings';
import { Budgets, PricesCard } from '../admin/Budgets';
import { Usage } from '../admin/Usage';
import { Skills } from '../admin/Skills';
import { Policies, Tools } from '../admin/Tools';
import { Toolsets } from '../admin/Toolsets';

export { toolFigures } from '../admin/Executions';

export function Admin({ section, agent }: { section: string; agent: string | null }) {
  const label = ADMIN_SECTIONS.find((entry) => entry.id === section)?.label ?? 'Admin';
  return (
    <div className="admin">
      <header className="workspace-head">
        <h1 className="conversation-title">
          {label}
          {agent && section !== 'settings' && section !== 'usage' && <span className="muted"> · {agent}</span>}
        </h1>
      </header>
      <div className="admin-body" key={`${section}/${agent}`}>
        {section === 'settings' ? (
          <>
            <Settings />
            <Budgets />
            <PricesCard />
            <McpServers />
          </>
        ) : section === 'usage' ? (
          <Usage />
        ) : !agent ? (
          <p className="muted">Choose an agent.</p>
        ) : section === 'prompt' ? (
          <>
            <DocumentCard agent={agent} kind="system_prompt" />
            <DocumentCard agent={agent} kind="learned_notes" />
            <DocumentCard agent={agent} kind="db_notes" />
          </>
        ) : section === 'memory' ? (
          <Memories agent={agent} />
        ) : section === 'tools' ? (
          <>
            <Toolsets agent={agent} />
            <Policies agent={agent} />
            <Tools agent={agent} />
          </>
        ) : section === 'skills' ? (
          <Skills agent={agent} />
        ) : section === 'components' ? (
          <Components agent={agent} />
        ) : section === 'executions' ? (
          <Executions agent={agent} />
        ) : section === 'schedules' ? (
          <Schedules agent={agent} />
        ) : section === 'learning' ? (
          <Learning agent={agent} />
        ) : (
          <div className="empty-state">
            <h2>{label}</h2>
            <p className="muted">Not shown here yet.</p>
          </div>
        )}
      </div>
    </div>
  );
}
