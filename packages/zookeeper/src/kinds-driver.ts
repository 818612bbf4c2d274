import type { AcquireRequest, AttemptResult, Grant, KindsDriver } from '@deadbolt/core/adapter';
import { lockPath } from './naming.js';
import { NodeKeeper } from './node-keeper.js';
import { checkPermits } from './permits-node.js';
import { runReadWriteRecipe } from './rw-recipe.js';
import { runSemaphoreRecipe } from './semaphore-recipe.js';

/**
 * Read, write and permit holds in Curator's layouts: InterProcessReadWriteLock (rw-recipe.ts) and
 * InterProcessSemaphoreV2 (semaphore-recipe.ts), each the contender loop with its own look. Their
 * holds are nodes like the mutex's, kept by the same NodeKeeper.
 */
export class ZooKeeperKinds extends NodeKeeper implements KindsDriver {
  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.contend(request, false, this.site.opDeadline(), undefined).then((grant) =>
      grant ? { acquired: true, grant } : { acquired: false },
    );
  }

  /** Native waiting: the recipe's watch; queueing is the same create as a try, so it is the first attempt too. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.contend(request, true, deadline, signal);
  }

  private contend(request: AcquireRequest, wait: boolean, deadline: number, signal: AbortSignal | undefined): Promise<Grant | undefined> {
    const site = this.site;
    const kind = request.kind;
    const data = Buffer.from(request.owner, 'utf8');
    if (kind?.type === 'permit') {
      return site.contend({
        request,
        deadline,
        data,
        recipe: (run) =>
          runSemaphoreRecipe(run, kind.permits, wait, deadline, signal, () => checkPermits(run, request.key, kind.permits, site.name)),
        sweeper: site.semaphores,
        sweepAfterGiveUp: true,
        semaphorePath: lockPath(site.options.basePath, request.key),
      });
    }
    if (kind === undefined) return Promise.reject(new TypeError("ZooKeeper's kinds driver serves read, write and permit requests"));
    const mode = kind.type;
    const downgradeOf = kind.type === 'read' ? kind.downgradeOf?.token : undefined;
    return site.contend({
      request,
      deadline,
      data,
      recipe: (run) => runReadWriteRecipe(run, mode, downgradeOf, wait, deadline, signal),
      sweeper: site.parents,
      sweepAfterGiveUp: wait,
    });
  }
}
