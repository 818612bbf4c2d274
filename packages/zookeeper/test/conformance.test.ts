import { describeLockConformance } from '@deadbolt/conformance';
import { startZooKeeper, startZooKeeperEnsemble, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { zooKeeperCapabilities } from '../src/index.js';

/** The ensemble as one handle: its url lists every member; faults hit the whole ensemble. */
async function ensembleHandle(): Promise<ServerHandle> {
  const ensemble = await startZooKeeperEnsemble(3);
  const first = ensemble.members[0]!;
  const all = (action: (member: ServerHandle) => Promise<void>) => async () => void (await Promise.all(ensemble.members.map(action)));
  return {
    ...first,
    url: ensemble.url,
    stop: () => ensemble.stop(),
    restart: all((member) => member.restart()),
    pause: all((member) => member.pause()),
    resume: all((member) => member.resume()),
    down: all((member) => member.down()),
    up: all((member) => member.up()),
  };
}

// The shared conformance suite against a standalone server and a 3-node ensemble.
const create = (server: ServerHandle | undefined, { prefix }: { prefix: string }) =>
  createLockClient({ url: `${server!.url}/deadbolt/conformance?sessionTimeoutMs=6000&connectTimeoutMs=3000&operationTimeoutMs=3000`, prefix });
// Each held lock is a logged znode write: 500 locks show the scale behaviour in seconds, not minutes.
// Server faults are covered by test/ensemble.test.ts and test/recipe.test.ts (leader loss, expiry).
const common = { capabilities: zooKeeperCapabilities, create, scaleLocks: 500 };
describeLockConformance({ name: 'zookeeper (standalone)', servers: () => startZooKeeper(), ...common });
describeLockConformance({ name: 'zookeeper (3-node ensemble)', servers: ensembleHandle, ...common });
