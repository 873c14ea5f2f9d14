// The document of a component frame. It is given to the iframe as `srcdoc` with
// sandbox="allow-scripts" (never allow-same-origin), so it runs in an opaque origin: it
// cannot read the app's cookies, storage or DOM, and its requests would carry no session.
// Its CSP forbids every network fetch (connect-src 'none' and no http(s) sources at all);
// scripts run only with this document's nonce or from blob: URLs the frame made itself
// (that is how the component's compiled module is loaded). Trusted Types with no policy
// forbid every HTML-to-DOM sink (innerHTML, srcdoc, document.write): the runtime and React
// build the DOM node by node, so nothing legitimate needs them, and without them a component
// cannot write a script into a child frame of its own. WebRTC: see runtime/main.tsx.

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
    "worker-src 'none'",
    "object-src 'none'",
    "manifest-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
    // the standard switch for WebRTC; Chromium ignores it today, so the runtime also removes
    // the constructors (runtime/main.tsx)
    "webrtc 'block'",
  ].join('; ');
}

export function frameDocument({ runtime, cspNonce, bridgeNonce }: { runtime: string; cspNonce: string; bridgeNonce: string }): string {
  // `</script` inside the runtime would end the element early; `<\/script` means the same in JS.
  const safeRuntime = runtime.replace(/<\/script/gi, '<\\/script');
  return `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${frameCsp(cspNonce)}">
<meta name="referrer" content="no-referrer">
<script nonce="${cspNonce}">window.__WRIGHT_FRAME__=${JSON.stringify({ nonce: bridgeNonce })};</script>
</head>
<body>
<div id="root"></div>
<script nonce="${cspNonce}">${safeRuntime}</script>
</body>
</html>`;
}
