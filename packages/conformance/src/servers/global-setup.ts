import { prepareServers } from './setup.js';

/**
 * vitest globalSetup for adapter packages:
 *
 *   // vitest.config.ts
 *   export default defineConfig({ test: { globalSetup: ['@deadbolt/conformance/global-setup'] } })
 *
 * Decides the provider once (one log line), exports it to the test workers through
 * DEADBOLT_SERVERS so they do not probe again, installs missing server binaries for the
 * `process` provider (or stops at once with the command to run), and on teardown removes what
 * crashed earlier runs left behind. It does not run ../shared/containers/prepare.sh: CI does.
 */
export default async function setup(): Promise<() => Promise<void>> {
  await prepareServers();
  return async () => {
    const { reapOrphans } = await import('./orphans.js');
    await reapOrphans();
  };
}
