import { renderPage } from '../test/render';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Admin, toolFigures } from '../components/Admin';
import { Market } from '../components/Market';
import { DiffView, parseUnifiedDiff } from './DiffView';

const DIFF = `--- v1
+++ v2
@@ -1,3 +1,3 @@
 keep one
-old line
+new line
 keep two
`;

type Handler = (method: string, url: URL, body: unknown) => unknown;

/** A fetch that answers from `handler` (a thrown `[status, message]` becomes an API error) and records calls. */
function mockFetch(handler: Handler) {
  const calls: { method: string; url: URL; body: unknown }[] = [];
  const fetchMock = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input), 'http://wright.test');
    const method = init?.method ?? 'GET';
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    calls.push({ method, url, body });
    try {
      return new Response(JSON.stringify(handler(method, url, body)), { status: 200 });
    } catch (thrown) {
      if (Array.isArray(thrown)) return new Response(JSON.stringify({ error: { code: 'rejected', message: thrown[1] } }), { status: thrown[0] });
      throw thrown;
    }
  });
  vi.stubGlobal('fetch', fetchMock);
  return calls;
}

afterEach(() => vi.unstubAllGlobals());

describe('diff view', () => {
  it('numbers old and new lines and classifies additions, removals and context', () => {
    const lines = parseUnifiedDiff(DIFF);
    expect(lines.map((line) => line.kind)).toEqual(['meta', 'meta', 'hunk', 'ctx', 'del', 'add', 'ctx']);
    expect(lines[4]).toMatchObject({ text: 'old line', old: 2, new: null });
    expect(lines[5]).toMatchObject({ text: 'new line', old: null, new: 2 });
    expect(lines[6]).toMatchObject({ old: 3, new: 3 });
  });

  it('colours added and removed lines and counts them', () => {
    const { container } = render(<DiffView diff={DIFF} label="v1 → v2" />);
    expect(container.querySelector('.diff-add')!.textContent).toContain('new line');
    expect(container.querySelector('.diff-del')!.textContent).toContain('old line');
    expect(screen.getByText('+1')).toBeTruthy();
    expect(screen.getByText('−1')).toBeTruthy();
  });

  it('says so when two versions are equal', () => {
    render(<DiffView diff="" />);
    expect(screen.getByText('No differences.')).toBeTruthy();
  });
});

describe('admin prompt history', () => {
  it('diffs any two chosen versions and rolls back with a reason, then shows the new version', async () => {
    let versions = [
      { version: 1, author: 'admin', reason: 'first', created_at: '2026-11-01T10:00:00Z', size: 3 },
      { version: 2, author: 'agent', reason: 'learned', created_at: '2026-11-02T10:00:00Z', size: 3 },
      { version: 3, author: 'agent', reason: 'more', created_at: '2026-11-03T10:00:00Z', size: 3 },
    ];
    let content = 'three';
    const calls = mockFetch((method, url, body) => {
      const path = url.pathname;
      if (path.endsWith('/learned_notes')) return { content: '', version: 0, updated_at: '' };
      if (path.endsWith('/learned_notes/versions')) return [];
      if (path.endsWith('/system_prompt')) return { content, version: versions.length, updated_at: '' };
      if (path.endsWith('/system_prompt/versions')) return versions;
      if (path.endsWith('/system_prompt/diff')) return { from: 0, to: 0, diff: `@@ -1 +1 @@\n-from${url.searchParams.get('from')}\n+to${url.searchParams.get('to')}\n` };
      if (method === 'POST' && path.endsWith('/system_prompt/rollback')) {
        const { reason } = body as { reason: string };
        versions = [...versions, { version: 4, author: 'rollback', reason, created_at: '2026-11-04T10:00:00Z', size: 3 }];
        content = 'one';
        return { version: 4 };
      }
      throw [404, `unexpected ${method} ${path}`];
    });
    renderPage(<Admin section="prompt" agent="ada" />);
    const prompt = await screen.findByRole('region', { name: 'System prompt' });
    // The newest change first: v2 → v3.
    await waitFor(() => expect(prompt.querySelector('.diff-add')?.textContent).toContain('to3'));
    fireEvent.click(within(prompt).getByLabelText('Diff from v1'));
    await waitFor(() => expect(prompt.querySelector('.diff-del')?.textContent).toContain('from1'));
    expect(calls.some((call) => call.url.pathname.endsWith('/diff') && call.url.search === '?from=1&to=3')).toBe(true);

    fireEvent.click(within(prompt).getByRole('button', { name: 'Roll back to v1' }));
    fireEvent.change(within(prompt).getByLabelText('Rollback reason'), { target: { value: 'too chatty' } });
    fireEvent.click(within(prompt).getByRole('button', { name: 'Confirm rollback' }));
    await within(prompt).findByText('too chatty');
    expect(calls.find((call) => call.method === 'POST')!.body).toEqual({ version: 1, reason: 'too chatty' });
    await waitFor(() => expect(within(prompt).getByTestId('system_prompt-content').textContent).toBe('one'));
    expect(within(prompt).getByText('rollback')).toBeTruthy();
  });
});

describe('admin tools', () => {
  it('shows an installed tool’s code and schema before enabling it', async () => {
    let enabled = false;
    const calls = mockFetch((method, url, body) => {
      if (url.pathname.endsWith('/agent-tools'))
        return [
          {
            name: 'shout',
            description: 'Shouts.',
            parameter_schema: { type: 'object', properties: { name: { type: 'string' } } },
            code: 'return args.name.toUpperCase();',
            enabled,
            version: 1,
            provenance: { kind: 'tool', listing: 'shout', version: 2, hash: 'abcdef0123456789' },
            updated_at: '',
          },
        ];
      if (method === 'PUT' && url.pathname.endsWith('/shout/enabled')) {
        enabled = (body as { enabled: boolean }).enabled;
        return {};
      }
      if (url.pathname.endsWith('/versions')) return [];
      throw [404, 'unexpected'];
    });
    renderPage(<Admin section="tools" agent="ada" />);
    const card = await screen.findByRole('region', { name: 'Tool shout' });
    expect(within(card).getByText(/market: shout v2 · abcdef012345/)).toBeTruthy();
    expect(within(card).getByText('disabled')).toBeTruthy();
    expect(card.querySelector('.review-code')).toBeNull();
    fireEvent.click(within(card).getByRole('button', { name: 'Review and enable…' }));
    expect(card.querySelector('.review-code')!.textContent).toBe('return args.name.toUpperCase();');
    expect(within(card).getByText(/"name": \{/)).toBeTruthy();
    fireEvent.click(within(card).getByRole('button', { name: 'Enable shout' }));
    await within(card).findByText('enabled');
    expect(calls.filter((call) => call.method === 'PUT').map((call) => call.body)).toEqual([{ enabled: true }]);
  });
});

describe('admin components', () => {
  it('shows an installed component’s code and props before enabling it, and disables it again', async () => {
    let enabled = false;
    const summary = () => ({
      name: 'chooser',
      description: 'Lets the person choose.',
      version: 1,
      enabled,
      provenance: { kind: 'component', listing: 'chooser', version: 3, hash: 'fedcba9876543210' },
    });
    const calls = mockFetch((method, url, body) => {
      if (url.pathname.endsWith('/components')) return [summary()];
      if (method === 'PUT' && url.pathname.endsWith('/components/chooser/enabled')) {
        enabled = (body as { enabled: boolean }).enabled;
        return summary();
      }
      if (url.pathname.endsWith('/components/chooser'))
        return { ...summary(), code: 'export default function Chooser() { return <b>pick</b>; }', compiled_js: '', props_schema: { type: 'object' } };
      if (url.pathname.endsWith('/versions')) return [];
      throw [404, 'unexpected'];
    });
    renderPage(<Admin section="components" agent="ada" />);
    const card = await screen.findByRole('region', { name: 'Component chooser' });
    expect(within(card).getByText(/market: chooser v3 · fedcba987654/)).toBeTruthy();
    expect(within(card).getByText('disabled')).toBeTruthy();
    fireEvent.click(within(card).getByRole('button', { name: 'Review and enable…' }));
    await waitFor(() => expect(card.querySelector('.review-code')!.textContent).toContain('<b>pick</b>'));
    fireEvent.click(within(card).getByRole('button', { name: 'Enable chooser' }));
    await within(card).findByText('enabled');
    expect(card.querySelector('.review-code')).toBeNull();
    fireEvent.click(within(card).getByRole('button', { name: 'Disable' }));
    await within(card).findByText('disabled');
    expect(calls.filter((call) => call.method === 'PUT').map((call) => call.body)).toEqual([{ enabled: true }, { enabled: false }]);
  });
});

describe('admin tool update', () => {
  it('shows the diff to the newer listing version before updating', async () => {
    const calls = mockFetch((method, url) => {
      if (url.pathname.endsWith('/agent-tools'))
        return [{ name: 'shout', description: 'Shouts.', parameter_schema: {}, code: 'return 1', enabled: true, version: 1, provenance: { listing: 'shout', version: 1, hash: 'h1' }, updated_at: '' }];
      if (url.pathname.endsWith('/shout/update-preview')) return { name: 'shout', from_version: 1, to_version: 2, diff: '@@ -1 +1 @@\n-return 1\n+return 2\n' };
      if (method === 'POST' && url.pathname.endsWith('/shout/update')) return { kind: 'tool', name: 'shout', listing: 'shout', version: 2, hash: 'h2', enabled: true };
      if (url.pathname.endsWith('/versions')) return [];
      throw [404, 'unexpected'];
    });
    renderPage(<Admin section="tools" agent="ada" />);
    const card = await screen.findByRole('region', { name: 'Tool shout' });
    fireEvent.click(within(card).getByRole('button', { name: 'Check for update' }));
    await waitFor(() => expect(card.querySelector('.diff-add')?.textContent).toContain('return 2'));
    expect(calls.some((call) => call.method === 'POST')).toBe(false);
    fireEvent.click(within(card).getByRole('button', { name: 'Update to v2' }));
    await waitFor(() => expect(calls.find((call) => call.method === 'POST')?.body).toEqual({ version: 2 }));
  });
});

describe('admin prompt edit', () => {
  it('saves an edit as a replace with its reason', async () => {
    let content = 'old text';
    const calls = mockFetch((method, url, body) => {
      if (method === 'POST' && url.pathname.endsWith('/system_prompt')) {
        content = (body as { content: string }).content;
        return { version: 2 };
      }
      if (url.pathname.endsWith('/versions')) return [];
      if (url.pathname.includes('/documents/')) return { content: url.pathname.endsWith('/system_prompt') ? content : '', version: 1, updated_at: '' };
      throw [404, 'unexpected'];
    });
    renderPage(<Admin section="prompt" agent="ada" />);
    const prompt = await screen.findByRole('region', { name: 'System prompt' });
    await waitFor(() => expect(within(prompt).getByTestId('system_prompt-content').textContent).toBe('old text'));
    fireEvent.click(within(prompt).getByRole('button', { name: 'Edit' }));
    fireEvent.change(within(prompt).getByLabelText('System prompt text'), { target: { value: 'new text' } });
    fireEvent.change(within(prompt).getByLabelText('Edit reason'), { target: { value: 'clearer' } });
    fireEvent.click(within(prompt).getByRole('button', { name: 'Save as a new version' }));
    await waitFor(() => expect(within(prompt).getByTestId('system_prompt-content').textContent).toBe('new text'));
    expect(calls.find((call) => call.method === 'POST')!.body).toEqual({ operation: 'replace', content: 'new text', reason: 'clearer' });
  });
});

describe('executions', () => {
  it('filters the log by tool, status and error category, and lists the latest failures with their error', async () => {
    const failure = {
      id: 9, tool_name: 'fetch_page', tool_kind: 'agent', tool_version: 1, caller: 'agent', args: { url: 'x' }, result: null,
      error: 'TypeError: boom', error_category: 'runtime', success: false, duration_us: 2000, created_at: new Date().toISOString(),
    };
    const ok = { ...failure, id: 8, tool_name: 'add', error: null, error_category: null, success: true, duration_us: 4000 };
    const calls = mockFetch((_method, url) => {
      const path = url.pathname;
      if (path.endsWith('/stats'))
        return { days: 7, total: 2, successful: 1, failed: 1, avg_duration_ms: 3, top_error_categories: [{ category: 'runtime', count: 1 }], by_tool: [{ tool: 'fetch_page', calls: 1, failures: 1, avg_duration_ms: 2 }, { tool: 'add', calls: 1, failures: 0, avg_duration_ms: 4 }] };
      if (path.endsWith('/tools')) return [{ name: 'add' }, { name: 'fetch_page' }];
      if (path.endsWith('/executions')) return url.searchParams.get('success') === 'false' ? [failure] : [ok, failure];
      if (path.endsWith('/versions'))
        return [
          { version: 1, author: 'agent', created_at: '', content: { code: 'throw new TypeError("boom")' } },
          { version: 2, author: 'agent', created_at: '', content: { code: 'return "fixed";' } },
        ];
      throw [404, 'unexpected'];
    });
    renderPage(<Admin section="executions" agent="ada" />);
    const failures = await screen.findByRole('region', { name: 'Latest failures' });
    await within(failures).findByText('TypeError: boom');
    // Opening a failure shows the code of the version that failed, not the newer fix.
    const details = failures.querySelector('details')!;
    details.open = true;
    fireEvent(details, new Event('toggle'));
    await within(failures).findByText('Code of v1, which ran');
    expect(failures.querySelector('.failure-code')!.textContent).toBe('throw new TypeError("boom")');
    const stats = screen.getByRole('region', { name: 'Last 7 days' });
    await within(stats).findByText('50%');
    const log = screen.getByRole('region', { name: 'Execution log' });
    await within(log).findByRole('table');
    await waitFor(() => expect(within(log).getByRole('option', { name: 'fetch_page' })).toBeTruthy());
    fireEvent.change(within(log).getByLabelText('Tool'), { target: { value: 'fetch_page' } });
    fireEvent.change(within(log).getByLabelText('Status'), { target: { value: 'false' } });
    fireEvent.change(within(log).getByLabelText('Error category'), { target: { value: 'runtime' } });
    await waitFor(() => {
      const last = calls.filter((call) => call.url.pathname.endsWith('/executions')).at(-1)!;
      expect(Object.fromEntries(last.url.searchParams)).toEqual({ tool: 'fetch_page', success: 'false', error_category: 'runtime', limit: '200' });
    });
  });

  it('computes per-tool success rate, median duration and error categories', () => {
    const base = { tool_kind: 'agent' as const, caller: 'agent' as const, args: {}, created_at: '' };
    const figures = toolFigures(
      { days: 7, total: 3, successful: 1, failed: 2, avg_duration_ms: 0, top_error_categories: [], by_tool: [{ tool: 't', calls: 3, failures: 2, avg_duration_ms: 0 }] },
      [
        { ...base, id: 1, tool_name: 't', success: true, duration_us: 1000 },
        { ...base, id: 2, tool_name: 't', success: false, error_category: 'timeout', duration_us: 5000 },
        { ...base, id: 3, tool_name: 't', success: false, error_category: 'timeout', duration_us: 3000 },
        { ...base, id: 4, tool_name: 'other', success: true, duration_us: 9000 },
      ],
    );
    expect(figures).toEqual([{ tool: 't', calls: 3, successRate: 1 / 3, medianMs: 3, categories: [['timeout', 2]] }]);
  });
});

describe('marketplace', () => {
  const listing = { kind: 'tool', name: 'shout', publisher_agent: 'pub', description: 'Shouts.', latest_version: 2, latest_hash: 'h2', created_at: '' };
  const version = (n: number, code: string) => ({
    version: n, description: 'Shouts.', hash: `hash-${n}-0123456789abcdef`, publisher_agent: 'pub', source: 'publish', created_at: '',
    bundle: { format: 1, kind: 'tool', name: 'shout', description: 'Shouts.', code, parameter_schema: { type: 'object' } },
  });

  it('asks what to do on a name conflict and installs under the chosen name', async () => {
    const calls = mockFetch((method, url) => {
      if (url.pathname === '/api/market/listings/tool/shout') return { listing, versions: [version(1, 'return 1'), version(2, 'return 2')], stats: { calls: 4, success_rate: 0.75, median_duration_us: 1500, recent_error_categories: ['timeout'] } };
      if (url.pathname === '/api/agents/ada/agent-tools') return [{ name: 'shout', provenance: null }];
      if (method === 'POST' && url.pathname === '/api/market/install') return { kind: 'tool', name: 'shout_loud', listing: 'shout', version: 2, hash: 'h', enabled: false };
      throw [404, 'unexpected'];
    });
    renderPage(<Market kind="tool" name="shout" agents={[{ id: 'ada', name: 'Ada' } as never]} agent="ada" />);
    await screen.findByText('return 2');
    expect(screen.getByText('75%')).toBeTruthy();
    expect(screen.getByText('1.5 ms')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Install into ada' }));
    await screen.findByText(/already has a tool named/);
    expect(calls.some((call) => call.method === 'POST')).toBe(false);
    fireEvent.change(screen.getByLabelText('New name'), { target: { value: 'shout_loud' } });
    fireEvent.click(screen.getByRole('button', { name: 'Install as shout_loud' }));
    await screen.findByText(/Installed into ada as shout_loud/);
    expect(calls.find((call) => call.method === 'POST')!.body).toEqual({ agent: 'ada', kind: 'tool', listing: 'shout', version: 2, rename_to: 'shout_loud' });
  });

  it('shows an imported file’s code and hash first, and the server’s error for a wrong hash', async () => {
    const calls = mockFetch((method, url) => {
      if (url.pathname === '/api/market/listings') return [];
      if (method === 'POST' && url.pathname === '/api/market/import') throw [422, 'the bundle’s hash does not match: the file says bad, its content hashes to good'];
      throw [404, 'unexpected'];
    });
    renderPage(<Market kind={null} name={null} agents={[]} agent={null} />);
    const file = new File([JSON.stringify({ bundle: { kind: 'tool', name: 'evil', description: 'x', code: 'return "pwned"' }, hash: 'bad' })], 'evil.json', { type: 'application/json' });
    fireEvent.change(screen.getByLabelText('Bundle file'), { target: { files: [file] } });
    await screen.findByText('return "pwned"');
    expect(screen.getByText('bad')).toBeTruthy();
    expect(calls.some((call) => call.url.pathname === '/api/market/import')).toBe(false);
    fireEvent.click(screen.getByRole('button', { name: 'Import into the marketplace' }));
    expect((await screen.findByRole('alert')).textContent).toContain('hash does not match');
  });
});
