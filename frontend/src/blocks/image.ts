// Image sources the app shows: data: URLs of images and bare base64 (what browser_screenshot
// returns), which becomes a PNG data URL — data the agent already holds — and http(s) addresses,
// which the page never loads itself: a request from the person's browser would pass by the
// egress policy (loopback and private addresses too) and, to another port of this host, carry
// the session cookie. An address is shown through `GET /api/images` instead (agentImageSource):
// Wright fetches it through the egress policy, checks that the bytes are a raster image and
// serves it from the app's own origin, so the app's policy (img-src 'self' data: blob: in
// vite.config.ts) still refuses every other source. When Wright refuses, the canvas says so and
// why (refusalOf, learnRefusal), with a link the person may open.

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export function imageSource(value: string): string | null {
  const trimmed = value.trim();
  if (/^data:image\/(png|jpe?g|gif|webp|svg\+xml|avif);base64,/i.test(trimmed)) return trimmed;
  if (trimmed.length >= 64 && BASE64.test(trimmed.replace(/\s+/g, ''))) {
    const data = trimmed.replace(/\s+/g, '');
    const type = data.startsWith('/9j/') ? 'jpeg' : data.startsWith('R0lGOD') ? 'gif' : data.startsWith('UklGR') ? 'webp' : 'png';
    return `data:image/${type};base64,${data}`;
  }
  return null;
}

/** An http(s) address given as an image: loaded only through Wright (agentImageSource). */
export function remoteImage(value: string): URL | null {
  try {
    const url = new URL(value.trim());
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/** A screenshot-like result (`{image: base64, width, height}`) found in a tool's output. */
export function imageInResult(output: unknown): { src: string; width?: number; height?: number } | null {
  if (typeof output !== 'object' || output === null) return null;
  const record = output as Record<string, unknown>;
  for (const key of ['image', 'screenshot', 'png', 'data_url']) {
    const value = record[key];
    if (typeof value === 'string') {
      const src = imageSource(value);
      if (src) return { src, width: typeof record.width === 'number' ? record.width : undefined, height: typeof record.height === 'number' ? record.height : undefined };
    }
  }
  return null;
}

/** Where the page loads the image at `remote`: Wright's egress-checked image route. */
export function agentImageSource(remote: URL): string {
  return `/api/images?url=${encodeURIComponent(remote.href)}`;
}

// Images through the route load at most two at a time, page-wide. The browser opens at most six
// connections to the app; an image from a slow server holds one until Wright gives up on it
// (`[images] timeout_ms`), so without a cap a dozen of them would make the app's own API requests
// wait that long. The images wait their turn instead.
const MAX_LOADING = 2;
// An image whose load never ends (it cannot, past the route's own timeout; this is the backstop)
const SLOT_BACKSTOP_MS = 30_000;
let loading = 0;
const waiting: (() => void)[] = [];

function pump() {
  while (loading < MAX_LOADING && waiting.length) waiting.shift()!();
}

/**
 * Gives `image` the source `src` when one of the page's image slots is free. The returned
 * function gives up: it takes the image out of the queue or, if it is loading, stops the load
 * (removing the source) and frees its slot — for images no longer shown.
 */
export function loadInTurn(image: HTMLImageElement, src: string): () => void {
  let release: (() => void) | undefined = undefined;
  let cancelled = false;
  const start = () => {
    // taken out of the page or given up while it waited: skip it
    if (cancelled || !image.isConnected) return;
    loading += 1;
    const timer = setTimeout(() => release?.(), SLOT_BACKSTOP_MS);
    release = () => {
      release = undefined;
      clearTimeout(timer);
      loading -= 1;
      image.removeEventListener('load', onSettled);
      image.removeEventListener('error', onSettled);
      pump();
    };
    const onSettled = () => release?.();
    image.addEventListener('load', onSettled);
    image.addEventListener('error', onSettled);
    image.src = src;
  };
  waiting.push(start);
  pump();
  return () => {
    cancelled = true;
    const index = waiting.indexOf(start);
    if (index >= 0) waiting.splice(index, 1);
    if (release) {
      image.removeAttribute('src');
      release();
    }
  };
}

// Why Wright refused an address, per address, for this page's life: a refused image is shown as
// refused from then on (markdown re-rendered while streaming does not ask again), and each
// address is asked about once however many times it is shown.
const refusals = new Map<string, string>();
const asking = new Map<string, Promise<string>>();

/** Wright's reason for refusing this address, if it has refused it before on this page. */
export function refusalOf(href: string): string | undefined {
  return refusals.get(href);
}

/**
 * Asks Wright why the image at `href` failed to load (the <img> error event says nothing):
 * the route answers a refusal with the API's error shape `{error: {code, message}}`.
 */
export function learnRefusal(href: string): Promise<string> {
  const known = refusals.get(href);
  if (known !== undefined) return Promise.resolve(known);
  let pending = asking.get(href);
  if (!pending) {
    pending = fetch(agentImageSource(new URL(href)), { credentials: 'same-origin' })
      .then(async (response) => {
        if (response.ok) return 'the image could not be shown';
        const body = (await response.json().catch(() => null)) as { error?: { message?: unknown } } | null;
        return typeof body?.error?.message === 'string' ? body.error.message : `status ${response.status}`;
      })
      .catch(() => 'Wright could not be reached')
      .then((reason) => {
        refusals.set(href, reason);
        asking.delete(href);
        return reason;
      });
    asking.set(href, pending);
  }
  return pending;
}

/** The refused state, as DOM (markdown's sanitized HTML): what was refused, why, and a link. */
export function refusedImageElement(document: Document, remote: URL, alt: string, reason: string): HTMLElement {
  const note = document.createElement('span');
  note.className = 'image-refused';
  note.setAttribute('role', 'note');
  note.append(`Image refused (${reason}): `);
  const link = document.createElement('a');
  link.href = remote.href;
  link.target = '_blank';
  link.rel = 'noopener noreferrer';
  link.textContent = alt || remote.host;
  note.append(link);
  return note;
}
