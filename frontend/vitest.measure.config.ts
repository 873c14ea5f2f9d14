import { defineConfig } from 'vitest/config';

// Measurements, not tests: `npm run measure` prints figures (see bench/).
export default defineConfig({
  test: {
    environment: 'node',
    include: ['bench/**/*.measure.ts'],
    // one at a time: two measurements side by side would time each other
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 60_000,
  },
});
