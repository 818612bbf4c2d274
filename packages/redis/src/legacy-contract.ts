import type { AcquireRequest, Grant, HoldDriver, LockBackend } from '@deadbolt/core/adapter';

/** What the old contract's members are built from: the backend's drivers, and how to tell a kind's grant. */
export interface LegacyParts {
  readonly backend: LockBackend;
  readonly mutex: HoldDriver;
  readonly kinds: HoldDriver | undefined;
  readonly ownsKind: (grant: Grant) => boolean;
}

/**
 * The old contract's members, for a core that reads the backend alone: it sends every grant to the
 * backend and looks for campaign, inspect, saveRun... on it. Each member forwards to the driver that
 * keeps the hold (kind grants told apart by their tokens). Deleted once core routes every hold to the
 * driver that issued it.
 */
export function legacyMembers({ backend, mutex, kinds, ownsKind }: LegacyParts): Record<string, unknown> {
  const keeperOf = (grant: Grant): HoldDriver => (kinds !== undefined && ownsKind(grant) ? kinds : mutex);
  const forRequest = (request: AcquireRequest): HoldDriver => (kinds !== undefined && request.kind !== undefined ? kinds : mutex);
  const members: Record<string, unknown> = {
    tryAcquire: (request: AcquireRequest) => forRequest(request).tryAcquire(request),
    renew: (grant: Grant, ttlMs: number) => keeperOf(grant).renew(grant, ttlMs),
    release: (grant: Grant) => keeperOf(grant).release(grant),
    validate: (grant: Grant) => keeperOf(grant).validate!(grant),
    renewMany: async (grants: readonly Grant[], ttlMs: readonly number[]) => {
      if (kinds === undefined || !grants.some(ownsKind)) return mutex.renewMany!(grants, ttlMs);
      const [ours, theirs] = [[] as number[], [] as number[]];
      for (const [index, grant] of grants.entries()) (ownsKind(grant) ? ours : theirs).push(index);
      const pick = <T>(items: readonly T[], indices: number[]): T[] => indices.map((index) => items[index]!);
      const [kindReplies, mutexReplies] = await Promise.all([
        kinds.renewMany!(pick(grants, ours), pick(ttlMs, ours)),
        theirs.length > 0 ? mutex.renewMany!(pick(grants, theirs), pick(ttlMs, theirs)) : Promise.resolve([]),
      ]);
      const replies = new Array<boolean>(grants.length);
      for (const [position, index] of ours.entries()) replies[index] = kindReplies[position]!;
      for (const [position, index] of theirs.entries()) replies[index] = mutexReplies[position]!;
      return replies;
    },
    orderKeys: backend.multi?.orderKeys,
    ...backend.operations,
    ...backend.runs,
  };
  const { acquire } = mutex;
  if (acquire !== undefined) {
    // Core skips its plain first attempt: acquire() takes a free lock in the same single script.
    members.acquireQueuesAtOnce = true;
    members.acquire = (request: AcquireRequest, deadline: number, signal: AbortSignal) =>
      (kinds?.acquire !== undefined && request.kind !== undefined ? kinds.acquire : acquire)(request, deadline, signal);
  }
  if (backend.multi?.tryAcquireMany) members.tryAcquireMany = backend.multi.tryAcquireMany;
  if (backend.multi?.acquireMany) members.acquireMany = backend.multi.acquireMany;
  if (backend.election) {
    members.campaign = backend.election.campaign;
    members.leader = backend.election.leader;
    members.leaderInfo = backend.election.leaderInfo;
  }
  return members;
}
