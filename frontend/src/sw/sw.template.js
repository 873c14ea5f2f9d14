// The canvas's service worker, completed at build time by vite.config.ts (`serviceWorker()`),
// which puts before this text the build's VERSION and the SHELL it may serve offline: the
// page and the files Vite named after their content (scripts, styles, icons).
//
// What it never keeps: an answer of the API (conversations, settings, anything private — the
// requests under /api and /mcp pass through untouched), and anything of another build. The
// component frame's runtime is inside the hashed main script and pinned by hash in the page's
// policy; one cache per build, the page and its scripts added together at install and the
// other builds' caches deleted at activation, so an offline page is always one build's page
// with that build's frame. Online, a page is always fetched from the server first.
/* global VERSION, SHELL */
const CACHE = 'wright-shell-' + VERSION;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(['/', ...SHELL]))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name.startsWith('wright-shell-') && name !== CACHE).map((name) => caches.delete(name))))
      .then(() => self.clients.claim()),
  );
});

function isServerPath(pathname) {
  return ['/api', '/mcp'].some((prefix) => pathname === prefix || pathname.startsWith(prefix + '/'));
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin || isServerPath(url.pathname)) return;
  if (request.mode === 'navigate') {
    // The server's page when it answers; this build's page when it does not (offline).
    event.respondWith(fetch(request).catch(() => caches.open(CACHE).then((cache) => cache.match('/')).then((page) => page || Response.error())));
    return;
  }
  if (SHELL.includes(url.pathname)) {
    event.respondWith(
      caches
        .open(CACHE)
        .then((cache) => cache.match(request))
        .then((hit) => hit || fetch(request)),
    );
  }
});

// A push from Wright (crates/wright-server/src/push.rs): `{title, body, url, tag}`.
self.addEventListener('push', (event) => {
  let message = { title: 'Wright', body: '', url: '/', tag: 'wright' };
  try {
    message = { ...message, ...event.data.json() };
  } catch {
    // Not JSON: shown as the text it is.
    message.body = event.data ? event.data.text() : '';
  }
  event.waitUntil(
    self.registration.showNotification(message.title, {
      body: message.body,
      tag: message.tag,
      icon: '/icons/icon-192.png',
      badge: '/icons/icon-192.png',
      data: { url: message.url },
    }),
  );
});

// Opens the conversation the notification is about: in a window of the app already open, or a new one.
self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const target = new URL(event.notification.data?.url ?? '/', self.location.origin);
  if (target.origin !== self.location.origin) return;
  event.waitUntil(
    self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((windows) => {
      const open = windows.find((client) => new URL(client.url).origin === self.location.origin);
      if (open) return open.focus().then((client) => client.navigate(target.href));
      return self.clients.openWindow(target.href);
    }),
  );
});
