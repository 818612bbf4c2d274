import type { CampaignRequest, ElectionDriver, TermGrant } from '@deadbolt/core/adapter';
import { ContenderKeeper } from './contender-keeper.js';
import { contendersPrefix } from './keys.js';
import { firstContender } from './mutex-recipe.js';
import type { EtcdOperations } from './operations.js';
import { checkCandidate } from './refused.js';
import type { EtcdSite } from './site.js';

/** Go's concurrency.Election: the mutex's queue with the participant id as the value; term = create_revision. */
export class EtcdElection extends ContenderKeeper implements ElectionDriver {
  constructor(
    site: EtcdSite,
    private readonly reads: EtcdOperations,
  ) {
    super(site);
  }

  /** Go's Election.Campaign. */
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    checkCandidate(request.candidate, request.key);
    const site = this.site;
    return site.guard('elect', request.key, () => site.contend(request, Buffer.from(request.candidate, 'utf8'), true, deadline, signal));
  }

  /** Go's Election.Leader: the value of the first-created key under the election's prefix. */
  leader(key: string): Promise<string | undefined> {
    const site = this.site;
    return site.bounded('leader', key, async () => {
      const value = await firstContender(site.client, contendersPrefix(site.options.namespace, key), site.callOptions());
      return value?.toString('utf8');
    });
  }

  /** Go's Election.Leader with its term (the leader key's create_revision), for election.observe(). */
  leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    return this.site.bounded('leader', key, () => this.reads.leaderInfo(key));
  }
}
