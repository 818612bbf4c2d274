import type { AcquireRequest, Grant, MultiDriver } from '@deadbolt/core/adapter';
import { contenderKey, contendersPrefix } from './keys.js';
import { waitFirstInQueue } from './kinds.js';
import { checkMultiSize, createAll } from './multi-recipe.js';
import { contenderAlive } from './mutex-recipe.js';
import type { EtcdSite } from './site.js';

/**
 * acquireAll: our key in every lock's queue in one txn (one create_revision for all: the same
 * relative order in every queue, so no deadlock), then a wait queue by queue (multi-recipe.ts).
 * Its grants are plain mutex keys, so the backend's mutex driver keeps them (no `keeper`).
 */
export class EtcdMulti implements MultiDriver {
  constructor(private readonly site: EtcdSite) {}

  async acquireMany(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined> {
    const site = this.site;
    const label =
      requests.length <= 3 ? requests.map((request) => request.key).join(', ') : `${requests[0]?.key}, ... (${requests.length} keys)`;
    // Before any I/O: a set etcd would refuse whole is refused here, never split.
    checkMultiSize(requests.length, { key: label, backend: site.name });
    return site.guard('acquire', label, async () => {
      const lease = await site.lease();
      const prefixes = requests.map((request) => contendersPrefix(site.options.namespace, request.key));
      const keys = prefixes.map((prefix) => site.held.take((slot) => contenderKey(prefix, lease.id, slot)));
      let keep = false;
      let created: string | undefined;
      try {
        created = await createAll(site.client, keys, lease.id, site.callOptions());
        const revision = created;
        let waited = false;
        const context = site.turnContext(true, deadline, signal, () => {
          if (!waited) requests[0]?.onContended?.();
          waited = true;
        });
        for (const prefix of prefixes) if (!(await waitFirstInQueue(prefix, revision, context))) return undefined;
        if (waited) {
          const alive = await Promise.all(keys.map((key) => contenderAlive(site.client, key, revision, lease.id, site.callOptions())));
          if (!alive.every(Boolean)) return undefined;
        }
        keep = true;
        return requests.map((request, index) => site.grantOn(lease, request, keys[index]!, revision));
      } finally {
        if (!keep) await Promise.all(keys.map((key) => site.retreat(key, created, lease.id)));
      }
    });
  }
}
