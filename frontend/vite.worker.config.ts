import { defineConfig } from 'vite';

// The component worker: React, our renderer, the UI primitives and the bridge client, as one
// classic script. The frame runtime embeds it as text (src/frame/runtime/main.ts) and starts
// it from a blob: URL, so it loads nothing over the network either. Built before the frame.
export default defineConfig({
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  build: {
    outDir: 'build/frame-worker',
    emptyOutDir: true,
    target: 'es2022',
    minify: true,
    lib: {
      entry: 'src/frame/worker/main.tsx',
      formats: ['iife'],
      name: 'WrightComponentWorker',
      fileName: () => 'frame-worker.js',
    },
  },
});
