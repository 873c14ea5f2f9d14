// The document of a component frame. It is given to the iframe as `srcdoc` with
// sandbox="allow-scripts" (never allow-same-origin), so it runs in an opaque origin: it
// cannot read the app's cookies, storage or DOM, and its requests would carry no session.
// Its CSP forbids every network fetch (connect-src 'none' and no http(s) sources at all);
// scripts run only with this document's nonce or from blob: URLs. The component itself runs
// in a blob: Worker the runtime starts (runtime/main.ts), which inherits this policy: it may
// load its compiled module and shims from blob: URLs it made, and connect nowhere. Trusted
// Types name one policy, `wright-worker`, which the runtime creates before anything else and
// uses for the worker's URL: every other HTML or script-URL sink (innerHTML, srcdoc,
// document.write, importScripts, new Worker) is refused, in the frame and in the worker.
// WebRTC: see runtime/main.ts and worker/main.tsx.

export function frameCsp(cspNonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${cspNonce}' blob:`,
    "style-src 'unsafe-inline'",
    'img-src data: blob:',
    'font-src data:',
    'media-src data: blob:',
    "connect-src 'none'",
    "frame-src 'none'",
    "child-src 'none'",
    // the frame's one worker, where component code runs (runtime/main.ts); a blob: worker
    // inherits this policy, so within it too nothing but blob: scripts load and nothing connects
    'worker-src blob:',
    "object-src 'none'",
    "manifest-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
    "require-trusted-types-for 'script'",
    // the one policy: the runtime's, which passes the worker's blob: URL to new Worker()
    'trusted-types wright-worker',
    // the standard switch for WebRTC; Chromium ignores it today, so the runtimes also remove
    // the constructors (runtime/main.ts, worker/main.tsx)
    "webrtc 'block'",
  ].join('; ');
}

/** The runtime as it stands inside its script element: `</script` in it would end the element
 * early; `<\/script` means the same in JS. The app's own CSP pins the hash of exactly this text
 * (see vite.config.ts), because a srcdoc frame inherits its parent's policy too. */
export function inlineRuntime(runtime: string): string {
  return runtime.replace(/<\/script/gi, '<\\/script');
}

export function frameDocument({ runtime, cspNonce, bridgeNonce }: { runtime: string; cspNonce: string; bridgeNonce: string }): string {
  // A srcdoc document's base URL is its parent's base URL, which document.baseURI hands to the
  // component: the app's <base href="/"> (index.html) makes that the origin alone — which the
  // frame already sees on every parent message — never the path and query (the conversation).
  // The bridge nonce travels in a meta element, not a script: the frame then has one inline
  // script, the same for every frame, whose hash the app's CSP can allow. The runtime reads the
  // element and removes it before component code runs.
  const attribute = bridgeNonce.replace(/[^A-Za-z0-9_-]/g, '');
  return `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${frameCsp(cspNonce)}">
<meta name="referrer" content="no-referrer">
<meta name="wright-bridge" content="${attribute}">
</head>
<body>
<div id="root"></div>
<script nonce="${cspNonce}">${inlineRuntime(runtime)}</script>
</body>
</html>`;
}
