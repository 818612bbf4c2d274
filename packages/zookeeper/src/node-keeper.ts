import type { Grant } from '@deadbolt/core/adapter';
import { checkAll } from './check-all.js';
import { isNoNode, remove, stat } from './operations.js';
import type { ZooKeeperSite } from './site.js';
import { nodeIsGrant } from './validate.js';

/**
 * Renew, validate and release of the holds a driver issues. Every ZooKeeper hold (a mutex's, a
 * reader's, a writer's, a permit's lease, a leader's term) is one ephemeral node whose path is the
 * grant's token, leased by the session: so every driver keeps its holds the same way, and each
 * driver is this keeper plus the way it issues them (the backend for the mutex, kinds-driver.ts,
 * election-driver.ts).
 */
export class NodeKeeper {
  constructor(protected readonly site: ZooKeeperSite) {}

  /** The lease is the session: renewing only checks that our node still exists. */
  async renew(grant: Grant): Promise<boolean> {
    const site = this.site;
    return site.guard('renew', grant.key, async () => {
      const client = await site.client(grant.key);
      return (await stat(client, grant.token, site.opDeadline())) !== undefined;
    });
  }

  /** Core's auto-renew batch: every node checked in one multi request per 500 locks. */
  async renewMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    const site = this.site;
    const key = grants[0]?.key ?? '';
    return site.guard('renew', key, async () => {
      const client = await site.client(key);
      return checkAll(
        client,
        grants.map((grant) => grant.token),
        site.opDeadline(),
      );
    });
  }

  validate(grant: Grant): Promise<boolean> {
    const site = this.site;
    const deadline = site.opDeadline();
    return site.guard('validate', grant.key, async () => nodeIsGrant(await site.session.ready(deadline, grant.key), grant, deadline));
  }

  /** Deletes our own node (its path holds our guid, so it can never be another owner's), then tidies the parent. */
  async release(grant: Grant): Promise<boolean> {
    const site = this.site;
    site.session.untrack(grant.token);
    return site.guard('release', grant.key, async () => {
      const client =
        site.session.connectedClient ??
        (await site.client(grant.key).catch((error: unknown) => {
          // Not connected: the session (and our node) may well live on; delete it once we reconnect.
          site.abandoned.add(grant.token);
          throw error;
        }));
      let deleted = true;
      try {
        await remove(client, grant.token, site.opDeadline());
      } catch (error) {
        // NO_NODE: already gone (the session ended, or an earlier release's reply was lost).
        if (isNoNode(error)) deleted = false;
        else {
          site.abandoned.add(grant.token);
          throw error;
        }
      }
      const sweep = site.tidyAfterRelease(grant);
      if (sweep !== undefined) await sweep;
      return deleted;
    });
  }
}
