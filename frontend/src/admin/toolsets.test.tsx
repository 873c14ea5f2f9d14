import { renderPage } from '../test/render';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Tool, ToolSettings } from '../api/client';
import { Policies } from './Tools';
import { Toolsets } from './Toolsets';

function tool(name: string, toolset: Tool['toolset']): Tool {
  return { name, description: '', parameters: {}, kind: toolset ? 'builtin' : 'agent', policy: 'allow', default_policy: 'allow', overridden: false, asks_when: null, toolset };
}

/** A fetch answering the tool-settings API from one settings object, recording each PUT. */
function fakeApi(initial: ToolSettings) {
  let settings = initial;
  const puts: ToolSettings[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = new URL(String(input), 'http://wright.test');
      if (url.pathname.endsWith('/tools')) {
        return new Response(JSON.stringify([tool('get_state', 'state'), tool('db_sql', 'database'), tool('browser_click', 'browser'), tool('double', null)]));
      }
      if (init?.method === 'PUT') {
        settings = JSON.parse(String(init.body));
        puts.push(settings);
      }
      return new Response(JSON.stringify(settings));
    }),
  );
  return puts;
}

afterEach(() => vi.unstubAllGlobals());

describe('toolsets page', () => {
  it('switches a toolset off and drops its tools from always_loaded', async () => {
    const puts = fakeApi({ toolsets: ['state', 'database'], loading: 'on_demand', always_loaded: ['db_sql', 'double'] });
    renderPage(<Toolsets agent="default" />);
    const database = await screen.findByRole('checkbox', { name: /Database/ });
    expect((database as HTMLInputElement).checked).toBe(true);
    expect(screen.getAllByText('db_sql')).toHaveLength(2); // a member of Database, and always sent whole
    await waitFor(() => expect(screen.getByRole('checkbox', { name: 'db_sql' })).toBeTruthy());
    fireEvent.click(database);
    await waitFor(() => expect(puts).toHaveLength(1));
    expect(puts[0]).toEqual({ toolsets: ['state'], loading: 'on_demand', always_loaded: ['double'] });
    await screen.findByRole('status');
    expect(screen.queryByRole('checkbox', { name: 'db_sql' })).toBeNull();
  });

  it('shares one tool list with the Approvals card, which follows a toolset switch (issue 30, item 2)', async () => {
    fakeApi({ toolsets: ['state', 'database'], loading: 'on_demand', always_loaded: [] });
    renderPage(
      <>
        <Toolsets agent="default" />
        <Policies agent="default" />
      </>,
    );
    await screen.findByRole('combobox', { name: 'Policy for db_sql' });
    const toolReads = () => (fetch as unknown as { mock: { calls: [RequestInfo | URL, RequestInit?][] } }).mock.calls.filter(([input, init]) => String(input).endsWith('/tools') && (init?.method ?? 'GET') === 'GET').length;
    expect(toolReads()).toBe(1); // one request for both
    fireEvent.click(await screen.findByRole('checkbox', { name: /Database/ }));
    await waitFor(() => expect(toolReads()).toBe(2)); // read again after the switch, for both
  });

  it('sends every schema when loading is set to all, and hides always_loaded then', async () => {
    const puts = fakeApi({ toolsets: ['state'], loading: 'on_demand', always_loaded: [] });
    renderPage(<Toolsets agent="default" />);
    fireEvent.change(await screen.findByLabelText('Tool loading'), { target: { value: 'all' } });
    await waitFor(() => expect(puts.at(-1)?.loading).toBe('all'));
    await waitFor(() => expect(screen.queryByText('Always sent whole')).toBeNull());
  });

  it('shows the server error', async () => {
    fakeApi({ toolsets: ['state'], loading: 'on_demand', always_loaded: [] });
    vi.stubGlobal(
      'fetch',
      vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
        if (init?.method === 'PUT') return new Response(JSON.stringify({ error: { code: 'invalid', message: 'always_loaded names `x`' } }), { status: 400 });
        if (String(input).endsWith('/tools')) return new Response('[]');
        return new Response(JSON.stringify({ toolsets: ['state'], loading: 'on_demand', always_loaded: [] }));
      }),
    );
    renderPage(<Toolsets agent="default" />);
    fireEvent.click(await screen.findByRole('checkbox', { name: /Memory/ }));
    expect(await screen.findByText(/always_loaded names/)).toBeTruthy();
  });
});
