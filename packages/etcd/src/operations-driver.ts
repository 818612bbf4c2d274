import type { BackendInspection, Grant, OperationsDriver } from '@deadbolt/core/adapter';
import type { EtcdOperations } from './operations.js';
import { etcdGrant, type EtcdSite } from './site.js';

/** The operator API (operations.ts), every call bounded and typed as the backend's others. */
export class EtcdOperationsDriver implements OperationsDriver {
  constructor(
    private readonly site: EtcdSite,
    private readonly reads: EtcdOperations,
  ) {}

  /** Every hold of the key, from one range of its prefix. */
  inspect(key: string): Promise<BackendInspection> {
    return this.site.bounded('inspect', key, () => this.reads.inspect(key));
  }

  /** Deletes every contender key of `key` in one txn, leaving a marker naming `by` for each. */
  forceRelease(key: string, by: string): Promise<boolean> {
    return this.site.bounded('forceRelease', key, () => this.reads.forceRelease(key, by));
  }

  /** After a refused renewal: the forceRelease marker of this very key (name and create_revision), if any. */
  forcedBy(grant: Grant): Promise<string | undefined> {
    const ours = etcdGrant(grant);
    return this.site.bounded('renew', grant.key, () => this.reads.forcedBy(ours.token, ours.revision));
  }

  /** The lock names under `prefix`; a failed read ends the listing with a typed error. */
  async *listKeys(prefix: string): AsyncIterable<string> {
    const keys = this.reads.listKeys(prefix)[Symbol.asyncIterator]();
    for (;;) {
      const next = await this.site.bounded('list', prefix, () => keys.next());
      if (next.done === true) return;
      yield next.value;
    }
  }
}
