/// <reference types="vitest/config" />
import { defineConfig } from 'vite';

// The app. `npm run build` first builds the component frame's runtime (vite.frame.config.ts)
// into build/frame, which the app embeds as a string (see src/frame/ComponentFrame.tsx).
export default defineConfig({
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
