import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { McpServer } from '../api/client';
import { Admin } from '../components/Admin';
import { McpServers } from './McpServers';
import { renderPage } from '../test/render';

function server(fields: Partial<McpServer>): McpServer {
  return { name: 'files', transport: 'stdio', state: 'up', tools: 3, skipped_tools: [], last_error: null, failures: 0, retry_at: null, ...fields };
}

/** A fetch answering `/api/mcp/servers` with the next of `answers` (the last repeats), and the Settings page's other reads with empty lists. */
function fakeApi(answers: McpServer[][]) {
  const asked: string[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: RequestInfo | URL) => {
      const path = new URL(String(input), 'http://wright.test').pathname;
      asked.push(path);
      let answer: unknown;
      if (path === '/api/mcp/servers') answer = answers.length > 1 ? answers.shift() : answers[0];
      else if (path === '/api/settings/connections') answer = { connections: [] };
      else if (path === '/api/settings/models') answer = { default: null, agents: [] };
      else if (path === '/api/agents') answer = [];
      else return new Response(JSON.stringify({ error: { code: 'not_found', message: path } }), { status: 404 });
      return new Response(JSON.stringify(answer), { status: 200 });
    }),
  );
  return asked;
}

afterEach(() => vi.unstubAllGlobals());

describe('MCP servers on the settings page', () => {
  it('shows each server’s state, tool count, last error and when a down server is tried again', async () => {
    const retryAt = '2026-11-24T10:15:00.000Z';
    fakeApi([
      [
        server({ name: 'files', tools: 3, last_error: 'the connection ended (process exited)' }),
        server({ name: 'search', transport: 'http', state: 'down', tools: 0, failures: 2, retry_at: retryAt, last_error: 'request denied by egress policy: http://10.0.0.5/mcp: 10.0.0.5 is private' }),
        server({ name: 'slow', state: 'starting', tools: 0 }),
        server({ name: 'odd', skipped_tools: ['has space'] }),
      ],
    ]);
    renderPage(<McpServers />);
    const files = await screen.findByRole('row', { name: 'MCP server files' });
    expect(within(files).getByText('up')).toBeTruthy();
    expect(within(files).getByText('3')).toBeTruthy();
    // An error from before the server came back is still shown, as past.
    expect(within(files).getByText('the connection ended (process exited)').className).toBe('muted');

    const search = screen.getByRole('row', { name: 'MCP server search' });
    expect(within(search).getByText('down').className).toContain('pill-danger');
    expect(within(search).getByText('http')).toBeTruthy();
    expect(within(search).getByText(/denied by egress policy/).className).toBe('failed');
    expect(within(search).getByText(`${new Date(retryAt).toLocaleString()} (failure 2 in a row)`)).toBeTruthy();

    const slow = screen.getByRole('row', { name: 'MCP server slow' });
    expect(within(slow).getByText('starting').className).toContain('pill-warning');
    expect(within(screen.getByRole('row', { name: 'MCP server odd' })).getByText(/names a model cannot call/).textContent).toContain('has space');
  });

  it('asks again on Refresh and shows a server that came back', async () => {
    const asked = fakeApi([[server({ name: 'files', state: 'down', tools: 0, failures: 1, retry_at: '2026-11-24T10:15:00.000Z', last_error: 'could not start' })], [server({ name: 'files', tools: 5, last_error: 'could not start' })]]);
    renderPage(<McpServers />);
    const row = await screen.findByRole('row', { name: 'MCP server files' });
    expect(within(row).getByText('down')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Refresh' }));
    await waitFor(() => expect(within(screen.getByRole('row', { name: 'MCP server files' })).getByText('up')).toBeTruthy());
    expect(within(screen.getByRole('row', { name: 'MCP server files' })).getByText('5')).toBeTruthy();
    expect(asked.filter((path) => path === '/api/mcp/servers')).toHaveLength(2);
  });

  it('says when none are configured, and is part of the Settings section', async () => {
    const asked = fakeApi([[]]);
    renderPage(<Admin section="settings" agent={null} />);
    expect(await screen.findByText('No MCP servers are configured.')).toBeTruthy();
    expect(screen.getByRole('region', { name: 'MCP servers' }).textContent).toContain('/mcp/<agent>');
    expect(asked).toContain('/api/mcp/servers');
  });
});
