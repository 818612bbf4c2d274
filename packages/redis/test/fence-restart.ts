import type { ServerHandle } from '@deadbolt/conformance/servers';
import type { LockClient } from '@deadbolt/core';

/** One grant of a key through a fresh client: the fence (or term) it got, released again. */
export type TakeFence = (locks: LockClient, key: string) => Promise<number>;

/** What makes a client for the server (a URL, or a backend on a connection a mutant changed). */
export interface FenceClients {
  open(server: ServerHandle): LockClient | Promise<LockClient>;
  /** Frees what open() made beyond the client (a connection the test owns). */
  closeAll(): Promise<void>;
}

export const takeMutex: TakeFence = async (locks, key) => {
  const lock = await locks.acquire(key, { waitMs: 2_000 });
  await lock.release();
  return lock.fence!;
};

export const takePermit: TakeFence = async (locks, key) => {
  const permit = await locks.semaphore(key, { permits: 2 }).acquire({ waitMs: 2_000 });
  await permit.release();
  return permit.fence!;
};

export const takeRead: TakeFence = async (locks, key) => {
  const read = await locks.readWriteLock(key).read.acquire({ waitMs: 2_000 });
  await read.release();
  return read.fence!;
};

export const takeAll: TakeFence = async (locks, key) => {
  const all = await locks.acquireAll([key, `${key}:second`], { waitMs: 2_000 });
  await all.release();
  return Math.min(all.fences.get(key)!, all.fences.get(`${key}:second`)!);
};

export const takeTerm: TakeFence = async (locks, key) => {
  for await (const term of locks.elect(key, { id: 'node-a' })) return term.term;
  throw new Error(`the election on ${key} ended without a term`);
};

/**
 * The case: a grant before a restart of a Redis without persistence (which comes back empty, its
 * fencing counters gone) and one after it; the later fence must be the larger. Each grant on a
 * client of its own, closed before the restart, so the second does not depend on a reconnect.
 * Returns both fences.
 */
export async function fencesAcrossRestart(
  server: ServerHandle,
  clients: FenceClients,
  take: TakeFence,
  key: string,
): Promise<{ before: number; after: number }> {
  const grant = async (): Promise<number> => {
    const locks = await clients.open(server);
    try {
      return await take(locks, key);
    } finally {
      await locks.close();
      await clients.closeAll();
    }
  };
  const before = await grant();
  await server.restart();
  const after = await grant();
  return { before, after };
}
