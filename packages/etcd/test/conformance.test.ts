import { describeLockConformance } from '@deadbolt/conformance';
import { etcdRequestCount, startEtcd, startEtcdCluster, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { createEtcdBackend, etcdCapabilities, type EtcdBackend } from '../src/index.js';
import { encodeName } from '../src/keys.js';
import { rawClient, runEtcdctl } from './support.js';

/** etcd's root user's password on the authentication configuration: the credential scan looks for it. */
const secret = 'etcd-S3cr3t-pw';
const withAuth = (url: string): string => url.replace(/^etcd:\/\//, `etcd://root:${encodeURIComponent(secret)}@`);

/** A single member with authentication on: a root user (etcd needs it to enable auth), then `auth enable`. */
async function startEtcdWithAuth(): Promise<ServerHandle> {
  const server = await startEtcd();
  try {
    await runEtcdctl(server.url, ['user', 'add', `root:${secret}`, '--interactive=false']);
    await runEtcdctl(server.url, ['user', 'grant-role', 'root', 'root']);
    await runEtcdctl(server.url, ['auth', 'enable']);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { ...server, url: withAuth(server.url), stop: () => server.stop() };
}

/** The cluster as one handle: its url lists every member; faults hit the whole cluster. */
async function clusterHandle(): Promise<ServerHandle> {
  const cluster = await startEtcdCluster(3);
  const first = cluster.members[0]!;
  const all = (action: (member: ServerHandle) => Promise<void>) => async () => void (await Promise.all(cluster.members.map(action)));
  return {
    ...first,
    url: cluster.url,
    stop: () => cluster.stop(),
    restart: all((member) => member.restart()),
    pause: all((member) => member.pause()),
    resume: all((member) => member.resume()),
    down: all((member) => member.down()),
    up: all((member) => member.up()),
  };
}

// The shared conformance suite against a single member and a 3-member cluster, under a namespace
// so that the suite's keys stay apart from anything else on the server.
const namespace = 'deadbolt-conformance';
const backends = new WeakMap<LockClient, EtcdBackend>();
const clientOn = (url: string, prefix: string): LockClient => {
  const backend = createEtcdBackend(`${url}/${namespace}?sessionTtlMs=6000&dialTimeoutMs=3000&callTimeoutMs=3000`);
  const client = createLockClient({ backend, prefix });
  backends.set(client, backend);
  return client;
};
const create = (server: ServerHandle | undefined, { prefix }: { prefix: string }) => clientOn(server!.url, prefix);
/** A crash as the server sees it: the lease ends with no release, the keys on it go. */
const kill = async (client: LockClient): Promise<void> => {
  await backends.get(client)?.close();
};
/** Every key left under the case's keys (contenders of locks and elections). */
const residue = async (server: ServerHandle | undefined, keyPrefix: string): Promise<number> => {
  const raw = rawClient(server!.url);
  try {
    return Number(await raw.getAll().prefix(`${namespace}/${keyPrefix}`).count());
  } finally {
    raw.close();
  }
};
/** The suite's expireHold hook: every contender key of the lock goes, as a lease the server let lapse. */
const expireHold = async (server: ServerHandle | undefined, fullKey: string): Promise<void> => {
  const raw = rawClient(server!.url);
  try {
    await raw.delete().prefix(`${namespace}/${encodeName(fullKey)}/`);
  } finally {
    raw.close();
  }
};
const common = {
  capabilities: etcdCapabilities,
  create,
  kill,
  residue,
  expireHold,
  // A run-once claim rides a lease of its own: whole seconds, at least etcd's minimum TTL (2 s by default).
  runLeaseStepMs: 2_000,
  // Every permit key records the semaphore's permits (semaphore-recipe.ts): a mismatch is refused.
  permitsRecorded: true,
  scaleLocks: 500,
  chaosOperations: 100,
  manyWaiters: 300,
};
describeLockConformance({
  name: 'etcd (single member)',
  servers: () => startEtcd(),
  ...common,
  // gRPC calls started on the member: rejected bad input must start none.
  commandCount: (server) => etcdRequestCount(server!.host, server!.port),
  // A hold ends at the session's local deadline (the last answered keep-alive's send time + the lease TTL).
  sessionDeadline: true,
  faults: {
    pause: (server) => server.pause(),
    resume: (server) => server.resume(),
    restart: (server) => server.restart(),
    down: (server) => server.down(),
    up: (server) => server.up(),
  },
  // No `proxied` hook, so the shared silent-link case is skipped here (it says so): a client whose
  // connections went silent sometimes keeps one socket open after close() (a grpc-js subchannel
  // that reconnects after its channel closed; seen in about 1 run in 6). Until that is fixed, the
  // silent link itself is tested in lease-loss.test.ts: loss is told before another client's grant.
});
describeLockConformance({
  name: 'etcd (3-member cluster)',
  servers: clusterHandle,
  ...common,
  skipGroups: { runOnce: 'the single member runs the same code (a claim is one txn and a lease, as here)' },
  // Every member at once: the whole cluster frozen, restarted, down and up again.
  faults: {
    pause: (server) => server.pause(),
    resume: (server) => server.resume(),
    restart: (server) => server.restart(),
    down: (server) => server.down(),
    up: (server) => server.up(),
  },
});

// Authentication: the credential never shows in a client, lock or error. The other groups run the
// same code on the single member without authentication.
const sameCode = 'the single member runs the same code; this configuration adds authentication';
describeLockConformance({
  name: 'etcd (authentication)',
  servers: startEtcdWithAuth,
  ...common,
  credentials: (server, { prefix }) => ({ secret, client: clientOn(server!.url, prefix) }),
  skipGroups: Object.fromEntries(
    [
      'safety',
      'leases',
      'waiting',
      'reentrancy',
      'faults',
      'input',
      'multi',
      'election',
      'readWrite',
      'semaphore',
      'fair',
      'fencing',
      'runOnce',
    ].map((group) => [group, sameCode]),
  ),
});
