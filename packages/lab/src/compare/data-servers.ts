/**
 * Where the fenced register lives: a data server of its own, never the lock server a scenario
 * injects its fault into (a restart, a failover or a partition of the lock server must not touch
 * the data, as in production, where the lock and the data are different systems). One PostgreSQL
 * and one Redis data server are started on first use and shared by every row of the run (each run
 * writes a register of its own name), so the comparison takes about as long as before;
 * stopDataServers() stops them at the end.
 *
 * Which one a row uses follows what a user of that backend most likely keeps data in: PostgreSQL
 * for PostgreSQL locks, and for ZooKeeper and etcd locks (the lock service beside a database); Redis for
 * Redis locks, and for Memcached ones (which carry no fence, so nothing is written there).
 */
import type { ServerHandle } from '@deadbolt/conformance/servers';
import { FencedStore, fencedStoreNames, memoryRegister } from './fenced-store.js';
import { postgresRegister } from './fenced-store-postgres.js';
import { redisRegister } from './fenced-store-redis.js';
import type { FencedStoreReport } from './history.js';

export type FencedStoreKind = FencedStoreReport['kind'];

/** The fenced store of a row, by its lock backend (see above). */
export function fencedStoreFor(backend: string): FencedStoreKind {
  return backend === 'postgres' || backend === 'zookeeper' || backend === 'etcd' ? 'postgres' : 'redis';
}

const started = new Map<'postgres' | 'redis', Promise<ServerHandle>>();

function dataServer(kind: 'postgres' | 'redis'): Promise<ServerHandle> {
  let server = started.get(kind);
  if (server === undefined) {
    server = import('@deadbolt/conformance/servers').then((s) => (kind === 'postgres' ? s.startPostgres() : s.startRedis()));
    // A failed start is not remembered: the next row tries again (and fails on its own account).
    server.catch(() => started.delete(kind));
    started.set(kind, server);
  }
  return server;
}

/** Opens the fenced register `name` in a store of `kind`, on its own connection. */
export async function openFencedStore(kind: FencedStoreKind, name: string): Promise<FencedStore> {
  const label = fencedStoreNames[kind].long;
  if (kind === 'memory') return new FencedStore(kind, label, memoryRegister());
  const { url } = await dataServer(kind);
  return new FencedStore(kind, label, kind === 'postgres' ? await postgresRegister(url, name) : await redisRegister(url, name));
}

/** Stops the data servers started so far. Idempotent. */
export async function stopDataServers(): Promise<void> {
  const servers = [...started.values()];
  started.clear();
  await Promise.all(servers.map(async (s) => (await s.catch(() => undefined))?.stop()));
}
