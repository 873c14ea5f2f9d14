import { defineConfig } from 'vitest/config';

// Browser end-to-end against a running Wright: WRIGHT_URL and WRIGHT_TOKEN (skipped without).
export default defineConfig({
  test: {
    environment: 'node',
    include: ['e2e/**/*.e2e.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One file at a time: each starts its own Chromium and servers, and several timing tests
    // (flood, focus, reconnects) measure the machine; on 2 shared cores files in parallel made
    // a different one of them fail on each run.
    fileParallelism: false,
    // What a poll waits for crosses a browser, a frame and the server (a component's state
    // write after it renders): 1 s, vitest's default, was missed under load (a model beside).
    expect: { poll: { timeout: 10_000 } },
  },
});
