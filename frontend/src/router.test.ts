// The app's addresses, as the declared routes match them, and back.
import { describe, expect, it } from 'vitest';
import { parseRoute, routePath, type Route } from './router';

describe('routes', () => {
  it('names every page and conversation by its address', () => {
    const cases: [string, Route][] = [
      ['/', { page: 'home' }],
      ['/agents/default', { page: 'agent', agent: 'default', conversation: null }],
      ['/agents/default/c/0193-a%20b', { page: 'agent', agent: 'default', conversation: '0193-a b' }],
      ['/admin/tools/default', { page: 'admin', section: 'tools', agent: 'default', rest: [] }],
      ['/admin/settings', { page: 'admin', section: 'settings', agent: null, rest: [] }],
      ['/admin', { page: 'admin', section: 'overview', agent: null, rest: [] }],
      ['/market', { page: 'market', kind: null, name: null }],
      ['/market/tool/weather', { page: 'market', kind: 'tool', name: 'weather' }],
      ['/no/such/page', { page: 'home' }],
    ];
    for (const [path, route] of cases) expect(parseRoute(path), path).toEqual(route);
  });

  it('writes the addresses it reads', () => {
    const routes: Route[] = [
      { page: 'agent', agent: 'a b', conversation: 'c/1' },
      { page: 'admin', section: 'executions', agent: 'default', rest: [] },
      { page: 'market', kind: 'component', name: 'chart' },
    ];
    for (const route of routes) expect(parseRoute(routePath(route))).toEqual(route);
  });
});
