import { fileURLToPath } from 'node:url';
import { packageConfig } from '../../vitest.shared.js';

export default packageConfig('unit', {
  test: {
    // The "known scheme, package not installed" case needs a package that is certainly missing;
    // the monorepo's own adapters may or may not be built, so one is replaced by a failing import.
    alias: { '@deadbolt/zookeeper': fileURLToPath(new URL('./test/fixtures/uninstalled-package.ts', import.meta.url)) },
    // Unit tests on the in-process memory backend: fast, no servers. Timing tests use fake timers;
    // the few real-timer race tests keep generous bounds for a shared 2-core machine.
  },
});
