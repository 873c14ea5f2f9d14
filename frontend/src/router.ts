// The app's addresses, on React Router (a data router over the History API). The server answers
// every path outside /api with index.html, so these addresses survive a reload.
//
//   /                                  → the first agent
//   /agents/:agent                     → that agent, newest conversation or an empty state
//   /agents/:agent/c/:conversation     → a conversation
//   /admin/:section/:agent             → admin pages for an agent
//   /market, /market/:kind/:name       → the marketplace, a listing
import { useMemo, type ReactNode } from 'react';
import { createBrowserRouter, matchRoutes, useLocation, type RouteObject } from 'react-router';

export type Route =
  | { page: 'home' }
  | { page: 'agent'; agent: string; conversation: string | null }
  | { page: 'admin'; section: string; agent: string | null; rest: string[] }
  | { page: 'market'; kind: string | null; name: string | null };

/** The app's addresses, declared once: React Router matches them (ranking the more specific
 * first) and keeps the history; `Route` is what a match means to the app. */
const PAGES: RouteObject[] = [
  { id: 'home', path: '/' },
  { id: 'agent', path: '/agents/:agent/*' },
  { id: 'conversation', path: '/agents/:agent/c/:conversation' },
  { id: 'admin', path: '/admin/:section?/:agent?/*' },
  { id: 'market', path: '/market/*' },
  { id: 'listing', path: '/market/:kind/:name' },
  { id: 'unknown', path: '*' },
];

export function parseRoute(pathname: string): Route {
  const match = matchRoutes(PAGES, pathname)?.at(-1);
  const params = match?.params ?? {};
  switch (match?.route.id) {
    case 'agent':
      return { page: 'agent', agent: params.agent!, conversation: null };
    case 'conversation':
      return { page: 'agent', agent: params.agent!, conversation: params.conversation! };
    case 'admin':
      return { page: 'admin', section: params.section ?? 'overview', agent: params.agent ?? null, rest: (params['*'] ?? '').split('/').filter(Boolean) };
    case 'market':
      return { page: 'market', kind: null, name: null };
    case 'listing':
      return { page: 'market', kind: params.kind!, name: params.name! };
    default:
      return { page: 'home' };
  }
}

let router: ReturnType<typeof createBrowserRouter> | null = null;

/** The router over the whole app: `shell` is drawn for every address and picks its page with
 * `useRoute`. Made once, by main.tsx. */
export function createAppRouter(shell: ReactNode) {
  router = createBrowserRouter([{ id: 'app', element: shell, children: PAGES }]);
  return router;
}

export function routePath(route: Route): string {
  const enc = encodeURIComponent;
  switch (route.page) {
    case 'home':
      return '/';
    case 'agent':
      return `/agents/${enc(route.agent)}` + (route.conversation ? `/c/${enc(route.conversation)}` : '');
    case 'admin':
      return ['/admin', route.section, route.agent, ...route.rest].filter(Boolean).map((part, index) => (index === 0 ? part : enc(part!))).join('/');
    case 'market':
      return route.kind && route.name ? `/market/${enc(route.kind)}/${enc(route.name)}` : '/market';
  }
}

/** Goes to `path` from anywhere (a click handler, an answer that names a conversation). */
export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (path === location.pathname) return;
  // Outside the app's router (a page rendered on its own, as in the unit tests) there is
  // only the browser's history to move.
  if (router) void router.navigate(path, { replace: options.replace });
  else if (options.replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
}

/** The page the current address names; a new value only when the address changes. */
export function useRoute(): Route {
  const { pathname } = useLocation();
  return useMemo(() => parseRoute(pathname), [pathname]);
}
