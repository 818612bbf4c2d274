import { describeLockConformance } from '@deadbolt/conformance';
import { startZooKeeper, startZooKeeperEnsemble, zooKeeperPacketsReceived, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { createZooKeeperBackend, encodeKey, zooKeeperCapabilities, type ZooKeeperBackend } from '../src/index.js';
import { children, connectStringOf, rawClient, removeNode } from './support.js';

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
const basePath = '/deadbolt/conformance';
const backends = new WeakMap<LockClient, ZooKeeperBackend>();
const clientOn = (url: string, prefix: string): LockClient => {
  const backend = createZooKeeperBackend(`${url}${basePath}?sessionTimeoutMs=6000&connectTimeoutMs=3000&operationTimeoutMs=3000`);
  const client = createLockClient({ backend, prefix });
  backends.set(client, backend);
  return client;
};
const create = (server: ServerHandle | undefined, { prefix }: { prefix: string }) => clientOn(server!.url, prefix);
/** A crash as the server sees it: the session ends with no release, its ephemeral nodes go. */
const kill = async (client: LockClient): Promise<void> => {
  await backends.get(client)?.close();
};
/** Every node left under the case's keys (lock paths, contenders, a semaphore's locks/leases). */
const residue = async (server: ServerHandle | undefined, keyPrefix: string): Promise<number> => {
  const raw = await rawClient(connectStringOf(server!.url));
  try {
    const count = async (path: string): Promise<number> => {
      const names = await children(raw, path);
      return names.length + (await Promise.all(names.map((name) => count(`${path}/${name}`)))).reduce((a, b) => a + b, 0);
    };
    const tops = (await children(raw, basePath)).filter((name) => name.startsWith(encodeKey(keyPrefix)));
    return tops.length + (await Promise.all(tops.map((name) => count(`${basePath}/${name}`)))).reduce((a, b) => a + b, 0);
  } finally {
    await raw.dispose();
  }
};
/** The suite's expireHold: every node under the key's path goes (leaves first), as a session expiry takes them. */
const expireHold = async (server: ServerHandle | undefined, fullKey: string): Promise<void> => {
  const raw = await rawClient(connectStringOf(server!.url));
  try {
    const removeBelow = async (path: string): Promise<void> => {
      for (const name of await children(raw, path)) {
        await removeBelow(`${path}/${name}`);
        await removeNode(raw, `${path}/${name}`);
      }
    };
    await removeBelow(`${basePath}/${encodeKey(fullKey)}`);
  } finally {
    await raw.dispose();
  }
};
// Each held lock is a logged znode write: 500 locks show the scale behaviour in seconds, not minutes.
// Server faults are covered by test/ensemble.test.ts and test/recipe.test.ts (leader loss, expiry).
// Every waiter is a sequential node with a watch on its predecessor. Since a client's concurrent
// looks share one listing, 1,000 waiters take 7.5-10 s at a load average of 11 (111 s before): the
// standalone server runs the 1,000; the ensemble keeps 300 (the same client code, three JVMs
// on the same cores).
const common = {
  capabilities: zooKeeperCapabilities,
  create,
  scaleLocks: 500,
  kill,
  residue,
  expireHold,
  chaosOperations: 100,
  manyWaiters: 300,
  // The path node's data records a semaphore's permits (permits-node.ts).
  permitsRecorded: true,
};
describeLockConformance({
  name: 'zookeeper (standalone)',
  servers: () => startZooKeeper(),
  ...common,
  manyWaiters: 1_000,
  // mntr's packet counter: rejected bad input must send nothing.
  commandCount: (server) => zooKeeperPacketsReceived(server!.host, server!.port),
  // A frozen server (SIGSTOP of the JVM, or a container pause): an acquire settles within waitMs +
  // one call and leaves no lock behind once it wakes. Not on the ensemble (all members frozen is the
  // same case for the client, and ~10 s of CI time).
  // A restart (the data directory, and with it the sessions, survive it): an election's candidacies
  // must outlive it, and a plain hold either survives or fails typed.
  faults: {
    pause: (server) => server.pause(),
    resume: (server) => server.resume(),
    restart: (server) => server.restart(),
    down: (server) => server.down(),
    up: (server) => server.up(),
  },
  // A hold ends at the session's local deadline (the last answered request + the session timeout).
  sessionDeadline: true,
  // Through a TCP proxy whose connections go silent: the session resumes on a new connection after
  // the read timeout (2/3 of the 6 s session). Not on the ensemble: the same client code.
  proxied: {
    target: (server) => ({ host: server!.host, port: server!.port }),
    create: (server, proxy, { prefix }) => clientOn(proxy.rewrite(server!.url), prefix),
  },
});
describeLockConformance({ name: 'zookeeper (3-node ensemble)', servers: ensembleHandle, ...common });
