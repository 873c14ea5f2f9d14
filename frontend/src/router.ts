// A tiny router over the History API. The server answers every non-/api path with
// index.html, so these addresses survive a reload.
//
//   /                                  → the first agent
//   /agents/:agent                     → that agent, newest conversation or an empty state
//   /agents/:agent/c/:conversation     → a conversation
//   /admin/:section/:agent             → admin pages for an agent
//   /market, /market/:kind/:name       → the marketplace, a listing
import { useEffect, useState } from 'react';

export type Route =
  | { page: 'home' }
  | { page: 'agent'; agent: string; conversation: string | null }
  | { page: 'admin'; section: string; agent: string | null; rest: string[] }
  | { page: 'market'; kind: string | null; name: string | null };

export function parseRoute(pathname: string): Route {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'agents' && parts[1]) {
    return { page: 'agent', agent: parts[1], conversation: parts[2] === 'c' && parts[3] ? parts[3] : null };
  }
  if (parts[0] === 'admin') return { page: 'admin', section: parts[1] ?? 'overview', agent: parts[2] ?? null, rest: parts.slice(3) };
  if (parts[0] === 'market') return { page: 'market', kind: parts[1] && parts[2] ? parts[1] : null, name: parts[1] && parts[2] ? parts[2] : null };
  return { page: 'home' };
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

const listeners = new Set<() => void>();
export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (path === location.pathname) return;
  if (options.replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  listeners.forEach((listener) => listener());
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.pathname));
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}
