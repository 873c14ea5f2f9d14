// Image sources the app shows: data: URLs of images and bare base64 (what browser_screenshot
// returns), which becomes a PNG data URL — data the agent already holds. The page never loads an
// address the agent chose: a request would leave from the person's browser, past the egress
// policy (loopback and private addresses too) and, to another port of this host, with the
// session cookie. So an http(s) image is shown as a link the person may open (remoteImage), and
// the app's policy (img-src in vite.config.ts) refuses any other image source.

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

/** An http(s) address given as an image: shown as a link, never loaded by the page. */
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
