import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['@deadbolt/conformance/global-setup'],
    // Real servers on a shared 2-core machine: one file at a time, generous deadlines.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
