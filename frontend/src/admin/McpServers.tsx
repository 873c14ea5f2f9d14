// The MCP servers of `[mcp.servers]` in config.toml, on the Settings page: each one's state
// (starting, up with how many tools, down with why and when it is tried again) and the last
// error even after it came back; and how to reach Wright itself as an MCP server (/mcp).
import { useQuery } from '@tanstack/react-query';
import { keys } from '../api/queries';
import { api, type McpServer } from '../api/client';
import { when } from './History';
import { ErrorAlert } from './parts';

/** How often the list is asked for again while the page is open: servers come and go. */
const REFRESH_MS = 10_000;

const STATE_PILLS: Record<McpServer['state'], string> = { starting: 'pill-warning', up: 'pill-success', down: 'pill-danger' };

function ServerRow({ server }: { server: McpServer }) {
  return (
    <tr aria-label={`MCP server ${server.name}`}>
      <td>
        <code>{server.name}</code> <span className="muted small">{server.transport}</span>
      </td>
      <td>
        <span className={`pill ${STATE_PILLS[server.state]}`}>{server.state}</span>
      </td>
      <td>{server.state === 'up' ? server.tools : '–'}</td>
      <td>
        {server.last_error ? <span className={server.state === 'down' ? 'failed' : 'muted'}>{server.last_error}</span> : '–'}
        {server.skipped_tools.length > 0 && (
          <div className="muted small">
            Not offered (names a model cannot call): {server.skipped_tools.map((name) => <code key={name}>{name} </code>)}
          </div>
        )}
      </td>
      <td>{server.state === 'down' && server.retry_at ? `${when(server.retry_at)} (failure ${server.failures} in a row)` : '–'}</td>
    </tr>
  );
}

export function McpServers() {
  // Asked again every REFRESH_MS while shown, and at once on Refresh.
  const query = useQuery({ queryKey: keys.mcpServers, queryFn: () => api.mcpServers(), refetchInterval: REFRESH_MS, staleTime: 0 });
  const servers = query.data ?? null;
  const error = query.error?.message ?? null;
  const refresh = () => void query.refetch();
  return (
    <section className="admin-card" aria-label="MCP servers">
      <h2>MCP servers</h2>
      <p className="muted small">
        The servers in <code>[mcp.servers]</code> of config.toml. Their tools are offered to every agent as <code>mcp__server__tool</code> while the server is up; a server that fails is tried again
        later, each wait twice the last. Wright is an MCP server too: point a client at <code>{window.location.origin}/mcp</code> (the default agent) or <code>/mcp/&lt;agent&gt;</code>, with the header{' '}
        <code>Authorization: Bearer &lt;token&gt;</code>.
      </p>
      <ErrorAlert error={error} />
      {servers === null ? (
        !error && <p className="muted">Loading…</p>
      ) : !servers.length ? (
        <p className="muted small">No MCP servers are configured.</p>
      ) : (
        <div className="table-wrap">
          <table className="data-table plain" aria-label="MCP server states">
            <thead>
              <tr>
                <th>Server</th>
                <th>State</th>
                <th>Tools</th>
                <th>Last error</th>
                <th>Next attempt</th>
              </tr>
            </thead>
            <tbody>
              {servers.map((server) => (
                <ServerRow key={server.name} server={server} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="card-actions">
        <button type="button" className="button small" onClick={refresh}>
          Refresh
        </button>
      </div>
    </section>
  );
}
