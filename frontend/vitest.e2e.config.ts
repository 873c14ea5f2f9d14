import { defineConfig } from 'vitest/config';

// Browser end-to-end against a running Wright: WRIGHT_URL and WRIGHT_TOKEN (skipped without).
export default defineConfig({
  test: {
    environment: 'node',
    include: ['e2e/**/*.e2e.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
