import { defineConfig } from 'vite';

// The component frame's runtime: the drawing surface, the bridge relay and, as text, the
// component worker (vite.worker.config.ts, built first), as one classic (IIFE) script. The app
// inlines it into the sandboxed iframe's srcdoc, so the frame loads nothing over the network
// (its CSP forbids it) and needs no CORS from the server.
export default defineConfig({
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  build: {
    outDir: 'build/frame',
    emptyOutDir: true,
    target: 'es2022',
    minify: true,
    lib: {
      entry: 'src/frame/runtime/main.ts',
      formats: ['iife'],
      name: 'WrightFrame',
      fileName: () => 'frame-runtime.js',
    },
  },
});
