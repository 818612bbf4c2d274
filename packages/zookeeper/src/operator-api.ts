import type { LockHolder } from '@deadbolt/core';
import { forcedMarkerMs, type BackendInspection, type Grant } from '@deadbolt/core/adapter';
import type { Client } from 'node-zookeeper-client';
import { baseName, contenders, latchName, lockName, lockPath } from './naming.js';
import { CreateMode, errorCode, Exception, getChildren, getDataAndStat, isNoNode, mkdirp, remove, request, zxid } from './operations.js';
import { readMarker, readWriteContenders, readWriteSortKey, writeMarker } from './rw-recipe.js';
import { leaseName, leasesChild, locksChild } from './semaphore-recipe.js';

/**
 * The operator API on ZooKeeper (Curator layouts, read as Curator's recipes decide who holds):
 * the mutex's first `lock-` node; the read-write lock's readers before its first writer, or that
 * writer when it is first; a semaphore's first `permits` leases. The fence is the node's czxid and
 * the owner its data (Deadbolt writes the owner id there; Curator writes the host's address). There
 * is no ttlLeftMs: a hold lasts as long as its holder's session, which only the server tracks.
 */

/**
 * forceRelease's markers, one per removed node, named as the node (its name holds a fresh uuid), with
 * the forcing client's id as data. `%f` is never an encoded key (encodeKey writes `%` only before two
 * uppercase hex digits), so this path is never a lock's.
 */
export const forcedDir = '%forced';

/** Where a ZooKeeper backend's operator calls run: a connected client, the base path and one call's deadline. */
export interface OperatorSite {
  readonly basePath: string;
  readonly operationTimeoutMs: number;
  client(key: string): Promise<Client>;
}

const deadlineOf = (site: OperatorSite): number => Date.now() + site.operationTimeoutMs;
const timeOf = (buffer: Buffer): number => Number(buffer.readBigInt64BE(0));

async function childrenOrNone(client: Client, path: string, deadline: number): Promise<string[]> {
  try {
    return await getChildren(client, path, deadline);
  } catch (error) {
    if (isNoNode(error)) return [];
    throw error;
  }
}

/** The read-write lock's holders: readers before the first writer, or the writer first (with its downgrade read). */
function readWriteHolders(children: readonly string[]): { holders: { name: string; kind: 'read' | 'write' }[]; waiters: number } {
  const sorted = readWriteContenders(children);
  const firstWriter = sorted.findIndex((name) => name.includes(writeMarker));
  const holders: { name: string; kind: 'read' | 'write' }[] = [];
  for (const [index, name] of sorted.entries()) {
    const isWriter = index === firstWriter;
    // A downgrade's read node carries its writer's sequence: it sorts beside it, and both hold.
    const besideWriter = firstWriter >= 0 && readWriteSortKey(name) === readWriteSortKey(sorted[firstWriter]!) && name.includes(readMarker);
    if (firstWriter < 0 || index < firstWriter || besideWriter) holders.push({ name, kind: 'read' });
    else if (isWriter && sorted.slice(0, index).every((before) => readWriteSortKey(before) === readWriteSortKey(name)))
      holders.push({ name, kind: 'write' });
  }
  return { holders, waiters: sorted.length - holders.length };
}

/** A node's owner (its data) and fence (its czxid), or undefined when it went since the listing. */
async function holderOf(client: Client, path: string, kind: LockHolder['kind'], deadline: number): Promise<LockHolder | undefined> {
  const found = await getDataAndStat(client, path, deadline);
  if (found === undefined) return undefined;
  const owner = found.data.toString('utf8');
  return { kind, fence: zxid(found.stat.czxid), ...(owner === '' ? {} : { owner }) };
}

export async function inspectOn(site: OperatorSite, key: string): Promise<BackendInspection> {
  const client = await site.client(key);
  const path = lockPath(site.basePath, key);
  const deadline = deadlineOf(site);
  const children = await childrenOrNone(client, path, deadline);
  const named: { path: string; kind: LockHolder['kind'] }[] = [];
  let waiters = 0;
  const mutex = contenders(children, lockName);
  if (mutex.length > 0) named.push({ path: `${path}/${mutex[0]}`, kind: 'mutex' });
  waiters += Math.max(0, mutex.length - 1);
  const readWrite = readWriteHolders(children);
  for (const hold of readWrite.holders) named.push({ path: `${path}/${hold.name}`, kind: hold.kind });
  waiters += readWrite.waiters;
  if (children.includes(leasesChild)) {
    const [leases, gate, data] = await Promise.all([
      childrenOrNone(client, `${path}/${leasesChild}`, deadline),
      childrenOrNone(client, `${path}/${locksChild}`, deadline),
      getDataAndStat(client, path, deadline),
    ]);
    // Curator counts every lease; the one beyond `permits` belongs to the acquirer waiting inside the gate.
    const permits = Number(/^deadbolt-permits=(\d+)$/.exec(data?.data.toString('utf8') ?? '')?.[1] ?? Number.POSITIVE_INFINITY);
    const sorted = contenders(leases, leaseName);
    for (const name of sorted.slice(0, permits)) named.push({ path: `${path}/${leasesChild}/${name}`, kind: 'permit' });
    waiters += Math.max(gate.length, sorted.length - Math.min(permits, sorted.length));
  }
  const holders = (await Promise.all(named.map((one) => holderOf(client, one.path, one.kind, deadline)))).filter(
    (one): one is LockHolder => one !== undefined,
  );
  return waiters > 0 ? { holders, waiters } : { holders };
}

/** Every contender node under the key: the lock's own children and a semaphore's gate and leases. */
async function nodesUnder(client: Client, path: string, deadline: number): Promise<string[]> {
  const children = await childrenOrNone(client, path, deadline);
  const nodes = children.filter((name) => name !== leasesChild && name !== locksChild).map((name) => `${path}/${name}`);
  for (const sub of [leasesChild, locksChild])
    if (children.includes(sub))
      nodes.push(...(await childrenOrNone(client, `${path}/${sub}`, deadline)).map((name) => `${path}/${sub}/${name}`));
  return nodes;
}

/** One multi: delete every listed node and leave a marker for each. NO_NODE (a node went meanwhile): false, list again. */
function forceOnce(client: Client, nodes: readonly string[], markers: string, by: string, deadline: number): Promise<boolean> {
  const transaction = client.transaction();
  for (const node of nodes)
    transaction.remove(node, -1).create(`${markers}/${baseName(node)}`, Buffer.from(by, 'utf8'), CreateMode.PERSISTENT);
  return request<boolean>(
    'multi delete',
    deadline,
    (done) =>
      transaction.commit((error: unknown) => {
        if (!error) return done(null, true);
        // A node that went, or a marker left by an earlier force of the same node: the listing is stale.
        const code = errorCode(error);
        if (code === Exception.NO_NODE || code === Exception.NODE_EXISTS) return done(null, false);
        done(error);
      }),
    undefined,
    client,
  );
}

/**
 * Deletes every node of every kind under the key in one multi (any session may delete another's
 * ephemeral node), with a persistent marker per node naming `by`. Markers older than forcedMarkerMs
 * are swept here (by their ctime, the server's clock), since a forced holder is often dead.
 */
export async function forceReleaseOn(site: OperatorSite, key: string, by: string): Promise<boolean> {
  const client = await site.client(key);
  const path = lockPath(site.basePath, key);
  const markers = `${site.basePath}/${forcedDir}`;
  for (let round = 0; round < 10; round += 1) {
    const deadline = deadlineOf(site);
    const nodes = await nodesUnder(client, path, deadline);
    if (nodes.length === 0) return false;
    await mkdirp(client, markers, deadline);
    if (await forceOnce(client, nodes, markers, by, deadline)) {
      await sweepMarkers(client, markers, deadlineOf(site)).catch(() => undefined);
      return true;
    }
  }
  throw new Error(`the holds on ${path} kept changing while they were being removed`);
}

/** Deletes the markers created more than `maxAgeMs` before the newest one (ctimes: the server's clock, not ours). */
export async function sweepMarkers(client: Client, markers: string, deadline: number, maxAgeMs = forcedMarkerMs): Promise<void> {
  const names = await childrenOrNone(client, markers, deadline);
  const found = await Promise.all(names.map((name) => getDataAndStat(client, `${markers}/${name}`, deadline)));
  const newest = Math.max(...found.map((one) => (one === undefined ? 0 : timeOf(one.stat.ctime))));
  await Promise.all(
    names.map((name, index) => {
      const one = found[index];
      if (one === undefined || timeOf(one.stat.ctime) > newest - maxAgeMs) return undefined;
      return remove(client, `${markers}/${name}`, deadline).catch(() => undefined);
    }),
  );
}

/** Who forced this grant's node away: its marker's data, read once and then removed (nobody else needs it). */
export async function forcedByOn(site: OperatorSite, grant: Grant): Promise<string | undefined> {
  const client = await site.client(grant.key);
  const marker = `${site.basePath}/${forcedDir}/${baseName(grant.token)}`;
  const found = await getDataAndStat(client, marker, deadlineOf(site));
  if (found === undefined) return undefined;
  await remove(client, marker, deadlineOf(site)).catch(() => undefined);
  return found.data.toString('utf8');
}

/** A lock node's name back to its key, or undefined for a name encodeKey cannot have written. */
function decodeKey(name: string): string | undefined {
  if (name === forcedDir) return undefined;
  try {
    return decodeURIComponent(name);
  } catch {
    return undefined;
  }
}

/** The keys under the base path that start with `prefix` (inspect then tells which are held). */
export async function* listKeysOn(site: OperatorSite, prefix: string): AsyncGenerator<string> {
  const client = await site.client(prefix);
  const names = await childrenOrNone(client, site.basePath, deadlineOf(site));
  for (const name of names.sort()) {
    const key = decodeKey(name);
    if (key?.startsWith(prefix)) yield key;
  }
}

/** The election's leader (the first latch node, or the first lock node of a LeaderSelector) with its czxid as the term. */
export async function leaderInfoOn(site: OperatorSite, key: string): Promise<{ id: string; term: number } | undefined> {
  const client = await site.client(key);
  const path = lockPath(site.basePath, key);
  // A leader that leaves between the listing and the read: list again (bounded, the next one is there).
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const children = await childrenOrNone(client, path, deadlineOf(site));
    const first = contenders(children, latchName)[0] ?? contenders(children, lockName)[0];
    if (first === undefined) return undefined;
    const found = await getDataAndStat(client, `${path}/${first}`, deadlineOf(site));
    if (found !== undefined) return { id: found.data.toString('utf8'), term: zxid(found.stat.czxid) };
  }
  return undefined;
}
