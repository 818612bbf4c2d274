import { startEtcd, type ServerHandle } from '@deadbolt/conformance/servers';
import type { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contenderKey, contendersPrefix } from '../src/keys.js';
import { resolveEtcdOptions } from '../src/options.js';
import { EtcdSite } from '../src/site.js';
import { rawClient } from './support.js';

/**
 * A create txn that timed out may still run later: on a cluster, a member frozen with the txn in its
 * socket runs it when it wakes, after our delete of that name was answered by another member. The
 * late create is played here by a plain client putting the same key on our lease after the retreat.
 */
let server: ServerHandle;
let raw: Etcd3;
let site: EtcdSite;

beforeAll(async () => {
  server = await startEtcd();
  raw = rawClient(server.url);
  site = new EtcdSite(resolveEtcdOptions(`${server.url}?callTimeoutMs=2000`));
});
afterAll(async () => {
  await site?.close();
  raw?.close();
  await server?.stop();
});

/** Resolves when `key` is deleted, or rejects after `withinMs`. */
function deletedWithin(key: string, fromRevision: string, withinMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = raw.watch().key(key).startRevision(fromRevision).only('delete').watcher();
    const timer = setTimeout(() => {
      void watcher.cancel();
      reject(new Error(`${key} still there ${withinMs} ms after its late create`));
    }, withinMs);
    watcher.on('delete', () => {
      clearTimeout(timer);
      void watcher.cancel();
      resolve();
    });
  });
}

describe('etcd: a create that lands after its retreat', () => {
  it('is deleted at once, and the name is not reused while its lease lives', async () => {
    const lease = await site.lease();
    const key = site.held.take((slot) => contenderKey(contendersPrefix('', 'late'), lease.id, slot));
    // The outcome of the create is unknown: the retreat deletes the name and watches it.
    await site.retreat(key, undefined, lease.id);
    const late = await raw.put(key).value('').lease(lease.id).exec();
    await deletedWithin(key, late.header.revision, 3_000);
    expect(await raw.get(key).string()).toBeNull();
    // A new hold of ours gets another name: a put under this one is still taken for a late create.
    const next = site.held.take((slot) => contenderKey(contendersPrefix('', 'late'), lease.id, slot));
    expect(next).not.toBe(key);
    site.held.free(next);
  });

  it('a create whose outcome is known is not watched: its name is free again', async () => {
    const lease = await site.lease();
    const keyOf = (slot: number): string => contenderKey(contendersPrefix('', 'known'), lease.id, slot);
    const key = site.held.take(keyOf);
    const created = await raw.put(key).value('').lease(lease.id).exec();
    await site.retreat(key, created.header.revision, lease.id);
    expect(site.held.take(keyOf)).toBe(key);
    site.held.free(key);
  });
});
