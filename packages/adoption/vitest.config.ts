import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['@deadbolt/conformance/global-setup'],
    fileParallelism: false,
    // npm installs from the registry (cached after the first run) and two vitest runs in a child app.
    testTimeout: 240_000,
    hookTimeout: 240_000,
  },
});
