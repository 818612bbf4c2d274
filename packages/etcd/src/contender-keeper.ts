import type { Grant } from '@deadbolt/core/adapter';
import { contenderAlive, contendersAlive, deleteContender } from './mutex-recipe.js';
import { etcdGrant, type EtcdSite } from './site.js';

/**
 * Renew, validate and release of the holds a driver issues. Every etcd hold (a mutex's, a reader's,
 * a writer's, a permit's, a leader's term) is one contender key on the session's lease, checked by
 * its create_revision: so every driver keeps its holds the same way, and each driver is this keeper
 * plus the way it issues them (the backend for the mutex, kinds-driver.ts, election-driver.ts).
 */
export class ContenderKeeper {
  constructor(protected readonly site: EtcdSite) {}

  /** The lease is the session's: a renewal checks that the lease lives and our key is still there. */
  renew(grant: Grant): Promise<boolean> {
    const site = this.site;
    const ours = etcdGrant(grant);
    return site.bounded('renew', grant.key, async () => {
      const lease = await site.session.lease();
      if (lease.id !== ours.leaseId) return false;
      return contenderAlive(site.client, ours.token, ours.revision, ours.leaseId, site.callOptions());
    });
  }

  /** Auto-renewal's batch: every grant's key read, 128 to a txn; a grant on an older lease is gone. */
  renewMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    const site = this.site;
    const ours = grants.map(etcdGrant);
    return site.bounded('renew', grants[0]?.key ?? '', async () => {
      const lease = await site.session.lease();
      const alive = await contendersAlive(
        site.client,
        ours.map((grant) => ({ key: grant.token, revision: grant.revision, leaseId: grant.leaseId })),
        site.callOptions(),
      );
      return alive.map((held, index) => held && ours[index]!.leaseId === lease.id);
    });
  }

  /**
   * etcd's `IsOwner`: one read of our contender key. The grant holds while that key exists with the
   * create_revision we were granted (the fence) and our lease attached: a key whose lease expired is
   * gone, and a key re-created by anyone since has a newer create_revision.
   */
  validate(grant: Grant): Promise<boolean> {
    const site = this.site;
    const ours = etcdGrant(grant);
    return site.bounded('validate', grant.key, () =>
      contenderAlive(site.client, ours.token, ours.revision, ours.leaseId, site.callOptions()),
    );
  }

  /** Deletes our key only if it is still the one we created (txn on its create_revision). */
  release(grant: Grant): Promise<boolean> {
    const site = this.site;
    const ours = etcdGrant(grant);
    site.riding.get(ours.leaseId)?.delete(ours);
    return site.bounded('release', grant.key, async () => {
      const remove = () => deleteContender(site.client, ours.token, ours.revision, site.callOptions());
      try {
        const deleted = await remove();
        site.held.free(ours.token);
        return deleted;
      } catch (error) {
        // The key may still be there: its slot stays taken until a background delete lands, or the
        // next hold of ours would adopt the key, and with it this hold's fence.
        site.deleteLater(ours.token, async () => {
          await remove();
          site.held.free(ours.token);
        });
        throw error;
      }
    });
  }
}
