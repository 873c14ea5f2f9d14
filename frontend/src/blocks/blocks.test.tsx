import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { Blocks, BlockView } from './Blocks';
import { normalizeChart } from './chartData';
import { imageInResult, imageSource } from './image';
import { Markdown } from './Markdown';
import { renderMarkdown } from './markdown';
import { sortRows } from './Table';
import type { Block } from './types';

describe('markdown', () => {
  it('renders GitHub-flavoured tables, task lists and strikethrough', () => {
    const html = renderMarkdown('| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n- [ ] todo\n\n~~gone~~');
    expect(html).toContain('<table>');
    expect(html).toContain('<td>1</td>');
    expect(html).toContain('type="checkbox"');
    expect(html).toContain('<del>gone</del>');
  });

  it('highlights fenced code by language', () => {
    const html = renderMarkdown('```js\nconst x = 1;\n```');
    expect(html).toContain('class="hljs"');
    expect(html).toContain('hljs-keyword');
  });

  it('removes scripts, event handlers and javascript: links', () => {
    const html = renderMarkdown('<script>alert(1)</script><img src=x onerror="alert(1)"> [x](javascript:alert(1)) <iframe src="https://e.test"></iframe>');
    expect(html).not.toContain('<script');
    expect(html).not.toContain('onerror');
    expect(html).not.toMatch(/href="javascript:/i);
    expect(renderMarkdown('<a href="javascript:alert(1)">x</a>')).not.toContain('javascript:');
    expect(html).not.toContain('<iframe');
  });

  it('opens links in a new tab without a referrer', () => {
    expect(renderMarkdown('[site](https://example.com)')).toContain('rel="noopener noreferrer"');
  });
});

describe('table', () => {
  const columns = [
    { key: 'name', label: 'Name' },
    { key: 'n', label: 'Count' },
  ];
  const data = [
    { name: 'b', n: 10 },
    { name: 'a', n: 9 },
    { name: 'c', n: null },
    { name: 'd', n: 100 },
  ];

  it('sorts numbers as numbers, empty cells last in both directions', () => {
    expect(sortRows(data, { key: 'n', direction: 'asc' }).map((row) => row.name)).toEqual(['a', 'b', 'd', 'c']);
    expect(sortRows(data, { key: 'n', direction: 'desc' }).map((row) => row.name)).toEqual(['d', 'b', 'a', 'c']);
  });

  it('sorts when a header is clicked, then reverses, then restores', () => {
    render(<BlockView block={{ type: 'table', columns, data }} />);
    const names = () => screen.getAllByRole('row').slice(1).map((row) => within(row).getAllByRole('cell')[0].textContent);
    expect(names()).toEqual(['b', 'a', 'c', 'd']);
    fireEvent.click(screen.getByRole('button', { name: /Name/ }));
    expect(names()).toEqual(['a', 'b', 'c', 'd']);
    expect(screen.getAllByRole('columnheader')[0].getAttribute('aria-sort')).toBe('ascending');
    fireEvent.click(screen.getByRole('button', { name: /Name/ }));
    expect(names()).toEqual(['d', 'c', 'b', 'a']);
    fireEvent.click(screen.getByRole('button', { name: /Name/ }));
    expect(names()).toEqual(['b', 'a', 'c', 'd']);
  });
});

describe('chart', () => {
  it('accepts Chart.js-style data', () => {
    expect(normalizeChart({ labels: ['a', 'b'], datasets: [{ label: 'x', data: [1, 2] }] })).toEqual({ labels: ['a', 'b'], series: [{ name: 'x', values: [1, 2] }] });
  });
  it('accepts labels + values, x + y and rows of objects', () => {
    expect(normalizeChart({ labels: ['a'], values: [3] }).series[0].values).toEqual([3]);
    expect(normalizeChart({ x: ['a', 'b'], y: [1, '2'] }).series[0].values).toEqual([1, 2]);
    const rows = normalizeChart({ data: [{ month: 'Jan', sales: 3, cost: 1 }, { month: 'Feb', sales: 5, cost: 2 }] });
    expect(rows.labels).toEqual(['Jan', 'Feb']);
    expect(rows.series.map((series) => series.name)).toEqual(['sales', 'cost']);
    expect(normalizeChart({ apples: 3, pears: 4 })).toEqual({ labels: ['apples', 'pears'], series: [{ name: 'Value', values: [3, 4] }] });
  });

  it.each(['line', 'bar', 'area', 'pie'] as const)('draws a %s chart as SVG', (chartType) => {
    const { container } = render(<BlockView block={{ type: 'chart', chartType, data: { labels: ['a', 'b', 'c'], datasets: [{ label: 's', data: [1, 3, 2] }] } }} />);
    const svg = container.querySelector('svg');
    expect(svg).not.toBeNull();
    const marks = chartType === 'bar' ? svg!.querySelectorAll('rect[rx]') : chartType === 'pie' ? svg!.querySelectorAll('path') : svg!.querySelectorAll('polyline');
    expect(marks.length).toBe(chartType === 'bar' || chartType === 'pie' ? 3 : 1);
    if (chartType === 'area') expect(svg!.querySelector('polygon')).not.toBeNull();
  });

  it('says so when there is no data', () => {
    render(<BlockView block={{ type: 'chart', chartType: 'line', data: {} }} />);
    expect(screen.getByText(/no data/)).toBeTruthy();
  });
});

describe('other blocks', () => {
  it('renders alerts of each variant with a role', () => {
    const { container } = render(
      <>
        {(['info', 'warning', 'danger', 'success'] as const).map((variant) => (
          <BlockView key={variant} block={{ type: 'alert', variant, content: `**${variant}**` }} />
        ))}
      </>,
    );
    expect(container.querySelectorAll('.alert').length).toBe(4);
    expect(container.querySelector('.alert-danger')!.getAttribute('role')).toBe('alert');
    expect(container.querySelector('.alert-success strong')!.textContent).toBe('success');
  });

  it('highlights a code block', () => {
    const { container } = render(<BlockView block={{ type: 'code', language: 'python', content: 'def f():\n  return 1' }} />);
    expect(container.querySelector('.hljs-keyword')).not.toBeNull();
    expect(screen.getByText('python')).toBeTruthy();
  });

  it('folds and unfolds JSON', () => {
    render(<BlockView block={{ type: 'json', data: { a: { b: [1, 2, 3] } } }} />);
    // two levels open, the third folded
    const folded = screen.getByText(/3 items/);
    expect(folded).toBeTruthy();
    fireEvent.click(folded.closest('button')!);
    expect(screen.queryByText(/3 items/)).toBeNull();
    expect(screen.getByText('2')).toBeTruthy();
  });

  it('shows images from data URLs and bare base64, loads an address only through Wright, and refuses others', () => {
    expect(imageSource('https://e.test/a.png')).toBeNull();
    const route = `/api/images?url=${encodeURIComponent('http://127.0.0.1:9/a.png')}`;
    const remote = render(<BlockView block={{ type: 'image', url: 'http://127.0.0.1:9/a.png', alt: 'chart' }} />);
    expect(remote.container.querySelector('img')?.getAttribute('src')).toBe(route);
    const html = renderMarkdown('![x](http://127.0.0.1:9/m.png) <img src="http://127.0.0.1:9/h.png" srcset="http://127.0.0.1:9/s.png 2x" data-agent-image="http://evil.test/">');
    // no source of its own: Markdown gives each its route address in turn
    expect(html).not.toMatch(/ src=/);
    expect([...html.matchAll(/data-agent-image="([^"]*)"/g)].map((match) => match[1])).toEqual(['http://127.0.0.1:9/m.png', 'http://127.0.0.1:9/h.png']);
    expect(html).not.toContain('srcset');
    expect(html).not.toContain('evil.test');
    expect(renderMarkdown('<img src="ftp://e.test/a.png" alt="odd">')).not.toContain('<img');
    expect(imageSource('javascript:alert(1)')).toBeNull();
    expect(imageSource('data:text/html;base64,PHNjcmlwdD4=')).toBeNull();
    const png = 'iVBORw0KGgo' + 'A'.repeat(80);
    expect(imageSource(png)).toBe(`data:image/png;base64,${png}`);
    expect(imageInResult({ image: png, width: 800, height: 600 })).toEqual({ src: `data:image/png;base64,${png}`, width: 800, height: 600 });
    const { container } = render(<BlockView block={{ type: 'image', url: 'javascript:alert(1)' }} />);
    expect(container.querySelector('img')).toBeNull();
  });

  it('loads agent images two at a time: the next starts when one has loaded or failed', () => {
    const { container } = render(<Markdown content={[1, 2, 3, 4].map((n) => `![${n}](http://e.test/turn-${n}.png)`).join(' ')} />);
    const sources = () => [...container.querySelectorAll('img')].map((image) => Boolean(image.getAttribute('src')));
    expect(sources()).toEqual([true, true, false, false]);
    fireEvent.load(container.querySelectorAll('img')[0]);
    expect(sources()).toEqual([true, true, true, false]);
    fireEvent.load(container.querySelectorAll('img')[1]);
    fireEvent.load(container.querySelectorAll('img')[2]);
    fireEvent.load(container.querySelectorAll('img')[3]);
    expect(sources()).toEqual([true, true, true, true]);
  });

  it('shows why Wright refused an image, asking the route once per address', async () => {
    const reason = 'request denied by egress policy: 127.0.0.1 is loopback (127.0.0.0/8)';
    const fetchMock = vi.fn(async () => new Response(JSON.stringify({ error: { code: 'denied', message: reason } }), { status: 403 }));
    vi.stubGlobal('fetch', fetchMock);
    try {
      const { container } = render(<Markdown content="![chart](http://127.0.0.1:7/refused.png) and again ![again](http://127.0.0.1:7/refused.png)" />);
      const route = `/api/images?url=${encodeURIComponent('http://127.0.0.1:7/refused.png')}`;
      expect([...container.querySelectorAll('img')].map((image) => image.getAttribute('src'))).toEqual([route, route]);
      for (const image of container.querySelectorAll('img')) fireEvent.error(image);
      await waitFor(() => expect(container.querySelectorAll('[role="note"]').length).toBe(2));
      expect(container.querySelector('img')).toBeNull();
      expect(container.textContent).toContain(`Image refused (${reason})`);
      expect(fetchMock).toHaveBeenCalledTimes(1);
      // Shown again (a re-render while streaming): refused at once, without asking.
      const block = render(<BlockView block={{ type: 'image', url: 'http://127.0.0.1:7/refused.png', alt: 'again' }} />);
      expect(block.container.querySelector('img')).toBeNull();
      expect(within(block.container).getByRole('note').textContent).toContain('Image refused');
      expect(fetchMock).toHaveBeenCalledTimes(1);
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('offers Dismiss when there is no form, answering {action: "dismissed"} as the server spells it', () => {
    const onAnswer = vi.fn();
    render(<Blocks blocks={[{ type: 'markdown', content: 'hi' }]} onAnswer={onAnswer} />);
    fireEvent.click(screen.getByRole('button', { name: 'Dismiss' }));
    expect(onAnswer).toHaveBeenCalledWith({ action: 'dismissed' });
  });

  it('is read-only without onAnswer', () => {
    const blocks: Block[] = [{ type: 'form', fields: [{ name: 'a', label: 'A', type: 'text' }], submitLabel: 'Go' }];
    render(<Blocks blocks={blocks} />);
    expect((screen.getByRole('button', { name: 'Go' }) as HTMLButtonElement).disabled).toBe(true);
    expect(screen.queryByRole('button', { name: 'Dismiss' })).toBeNull();
  });
});
