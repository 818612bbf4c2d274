import { defineConfig } from 'vitest/config';

/**
 * The documentation's own tests (`npm run docs:test`, after `docs:build`): the TypeScript samples
 * compile, no page names a tracker number, and the built site works in a real browser.
 */
export default defineConfig({
  test: {
    root: new URL('.', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
