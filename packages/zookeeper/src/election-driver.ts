import type { CampaignRequest, ElectionDriver, TermGrant } from '@deadbolt/core/adapter';
import { nodeNameOf, readLeader, runElectionRecipe } from './election.js';
import { lockPath } from './naming.js';
import { NodeKeeper } from './node-keeper.js';
import { leaderInfoOn } from './operator-api.js';
import type { RecipeRun } from './recipe.js';
import { operatorSiteOf } from './operations-driver.js';

/**
 * Election in Curator's LeaderLatch (or LeaderSelector) layout (election.ts): data = the participant
 * id, term = our node's czxid. A term is a node like a lock's, kept by the same NodeKeeper.
 */
export class ZooKeeperElection extends NodeKeeper implements ElectionDriver {
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    const site = this.site;
    return site.guard('elect', request.key, async () => {
      const client = await site.session.ready(Number.POSITIVE_INFINITY, request.key);
      if (site.abandoned.hasPending) await site.abandoned.retry();
      const run: RecipeRun = {
        ...site.recipeRun(client, request, Buffer.from(request.candidate, 'utf8')),
        nodeName: nodeNameOf(request.layout),
      };
      const ours = await runElectionRecipe(run, deadline, signal);
      if (ours === undefined) {
        await site.parents.schedule(run.lockPath);
        return undefined;
      }
      return site.grantFor(request, ours, run.lockPath);
    });
  }

  /** The current leader's id: the data of the first node (Curator's getLeader()). */
  leader(key: string, layout?: string): Promise<string | undefined> {
    const site = this.site;
    return site.guard('leader', key, async () => {
      const client = await site.client(key);
      return readLeader(client, lockPath(site.options.basePath, key), layout, site.options.operationTimeoutMs);
    });
  }

  /** The leader with its term (its node's czxid), for election.observe(). */
  leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    return this.site.guard('leader', key, () => leaderInfoOn(operatorSiteOf(this.site), key));
  }
}
