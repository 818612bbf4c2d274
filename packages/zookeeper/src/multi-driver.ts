import type { AcquireRequest, Grant, MultiDriver } from '@deadbolt/core/adapter';
import { runMultiLockRecipe } from './multi-recipe.js';
import { checkMultiFits } from './multi-size.js';
import { lockPath } from './naming.js';
import type { ZooKeeperSite } from './site.js';

/**
 * Multi-lock: our node under every path in one multi, then a wait path by path (multi-recipe.ts).
 * Its grants are plain mutex nodes, so the backend's mutex driver keeps them (no `keeper`).
 */
export class ZooKeeperMulti implements MultiDriver {
  readonly #site: ZooKeeperSite;

  constructor(site: ZooKeeperSite) {
    this.#site = site;
  }

  acquireMany(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined> {
    const site = this.#site;
    const key = requests.length <= 3 ? requests.map((each) => each.key).join(', ') : `${requests[0]?.key}, ... (${requests.length} keys)`;
    return site.guard('acquire', key, async () => {
      checkMultiFits(
        requests.map((each) => ({ lockPath: lockPath(site.options.basePath, each.key), data: Buffer.from(each.owner, 'utf8') })),
        site.options.juteMaxBuffer,
        key,
      );
      const client = await site.session.ready(Number.POSITIVE_INFINITY, key);
      if (site.abandoned.hasPending) await site.abandoned.retry();
      const runs = requests.map((each) => site.recipeRun(client, each, Buffer.from(each.owner, 'utf8')));
      const held = await runMultiLockRecipe(runs, deadline, signal, requests[0]?.onContended);
      if (held === undefined) {
        for (const run of runs) await site.parents.schedule(run.lockPath);
        return undefined;
      }
      return held.map((node, index) => site.grantFor(requests[index]!, node, runs[index]!.lockPath));
    });
  }
}
