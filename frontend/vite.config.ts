/// <reference types="vitest/config" />
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { defineConfig, type Plugin } from 'vite';
import { inlineRuntime } from './src/frame/srcdoc';

/**
 * The app's script and image policy, as a meta element in the built index.html: scripts only from the
 * app's own origin, blob: scripts (how a component frame starts its worker, and the worker loads
 * the component — a blob: worker inherits the frame's policy, and so this one) and the component
 * frame's runtime, pinned by the hash of its exact text. A srcdoc frame inherits its parent's
 * policy, so the runtime must be allowed here as well as by the frame's own nonce; nothing
 * else inline runs in the app, so an injected script or handler does not either. Build only:
 * the dev server injects inline scripts of its own.
 */
function scriptPolicy(): Plugin {
  return {
    name: 'wright-script-policy',
    apply: 'build',
    transformIndexHtml(html) {
      const runtime = readFileSync(new URL('./build/frame/frame-runtime.js', import.meta.url), 'utf8');
      const hash = createHash('sha256').update(inlineRuntime(runtime), 'utf8').digest('base64');
      // Images (and audio, video) only from data the page holds: an agent-chosen address would be requested by the
      // person's browser (src/blocks/image.ts).
      const policy = `script-src 'self' blob: 'sha256-${hash}'; img-src 'self' data: blob:; media-src 'self' data: blob:`;
      return html.replace('<head>', `<head>\n    <meta http-equiv="Content-Security-Policy" content="${policy}" />`);
    },
  };
}

/**
 * The service worker (src/sw/sw.template.js) as `/sw.js`, with this build's version and the
 * files it may serve offline: the hashed assets Vite emitted and the files of public/ (icons,
 * manifest). The version is a hash of those names, so each build's worker is a new worker and
 * its cache a new cache. Build only.
 */
function serviceWorker(): Plugin {
  return {
    name: 'wright-service-worker',
    apply: 'build',
    enforce: 'post',
    generateBundle(_options, bundle) {
      const emitted = Object.keys(bundle).filter((name) => name.startsWith('assets/'));
      const publicFiles = ['manifest.webmanifest', 'icons/icon-192.png', 'icons/icon-512.png', 'icons/maskable-512.png', 'icons/apple-touch-icon.png'];
      const shell = [...emitted, ...publicFiles].sort().map((name) => '/' + name);
      const version = createHash('sha256').update(shell.join('\n')).update(readFileSync(new URL('./index.html', import.meta.url))).digest('hex').slice(0, 16);
      const template = readFileSync(new URL('./src/sw/sw.template.js', import.meta.url), 'utf8');
      const source = `const VERSION = ${JSON.stringify(version)};\nconst SHELL = ${JSON.stringify(shell)};\n${template}`;
      this.emitFile({ type: 'asset', fileName: 'sw.js', source });
    },
  };
}

// The app. `npm run build` first builds the component frame's runtime (vite.frame.config.ts)
// into build/frame, which the app embeds as a string (see src/frame/ComponentFrame.tsx).
export default defineConfig({
  plugins: [scriptPolicy(), serviceWorker()],
  build: {
    outDir: 'dist',
    target: 'es2022',
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
  server: {
    // `npm run dev` talks to a `wright serve` on the default address.
    proxy: { '/api': { target: 'http://127.0.0.1:8080', changeOrigin: false } },
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.{ts,tsx}'],
    setupFiles: ['src/test/setup.ts'],
  },
});
