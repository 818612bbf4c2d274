import { Etcd3, EtcdLockFailedError, type Lease } from 'etcd3';
import type { Mutex } from '../subject.js';

/** etcd3 clients on the member of `url` (etcd://host:port). */
function connect(url: string): Etcd3 {
  const { host } = new URL(url.replace(/^etcd:/, 'http:'));
  return new Etcd3({ hosts: `http://${host}` });
}

const prefixEnd = (prefix: Buffer): Buffer => {
  const end = Buffer.from(prefix);
  end[end.length - 1]! += 1;
  return end;
};

/**
 * The bare protocol of Go's concurrency.Mutex on the etcd3 client, no Deadbolt: one lease per
 * client (etcd3 keeps it alive), a txn that puts `<key>/<lease hex>` if absent and reads the first
 * created key under the prefix; when that is not ours, watch the key just below ours for its
 * delete and look again. Release: a delete of our key. What Deadbolt's adapter does, minus its
 * typed errors, deadlines and loss detection.
 */
export async function openRawEtcd(url: string): Promise<Mutex> {
  const client = connect(url);
  const lease: Lease = client.lease(10);
  const leaseId = await lease.grant();
  const hex = BigInt(leaseId).toString(16);
  return {
    async acquire(name) {
      const prefix = Buffer.from(`${name}/`);
      const key = Buffer.from(`${name}/${hex}`);
      const firstCreated = { key: prefix, range_end: prefixEnd(prefix), sort_target: 'Create', sort_order: 'Ascend', limit: 1 } as const;
      const created = await client.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key, value: Buffer.alloc(0), lease: leaseId } }, { request_range: firstCreated }],
      });
      const mine = BigInt(created.header.revision);
      let holder = created.responses[1]?.response_range.kvs[0]?.create_revision;
      while (holder !== undefined && BigInt(holder) !== mine) {
        const below = await client.kv.range({
          key: prefix,
          range_end: prefixEnd(prefix),
          sort_target: 'Create',
          sort_order: 'Descend',
          limit: 1,
          max_create_revision: (mine - 1n).toString(),
        });
        const predecessor = below.kvs[0];
        if (predecessor === undefined) break;
        const watcher = await client
          .watch()
          .key(predecessor.key)
          .startRevision((BigInt(below.header.revision) + 1n).toString())
          .only('delete')
          .create();
        await new Promise<void>((resolve) => {
          watcher.once('delete', () => resolve());
          watcher.once('error', () => resolve());
        });
        await watcher.cancel();
        holder = undefined;
        const first = await client.kv.range(firstCreated);
        holder = first.kvs[0]?.create_revision;
      }
      return async () => {
        await client.kv.deleteRange({ key });
      };
    },
    async close() {
      await lease.revoke().catch(() => undefined);
      client.close();
    },
  };
}

/**
 * etcd3's own lock, `client.lock(name).acquire()` / `.release()`: a lease per lock (TTL 30 s) and a
 * put-if-absent. It does not wait: a taken lock throws EtcdLockFailedError at once, so a contended
 * worker retries after 5 ms, as a caller of it must.
 */
export async function openEtcd3Lock(url: string): Promise<Mutex> {
  const client = connect(url);
  return {
    async acquire(name) {
      for (;;) {
        const lock = client.lock(name);
        try {
          await lock.acquire();
          return () => lock.release();
        } catch (error) {
          if (!(error instanceof EtcdLockFailedError)) throw error;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    },
    async close() {
      client.close();
    },
  };
}
