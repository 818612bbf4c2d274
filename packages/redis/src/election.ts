import type { CampaignRequest, ElectionDriver, HoldDriver, TermGrant } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { fenceKey, releaseChannel, siblingKey, waitingKey } from './keys.js';
import type { CallGuard } from './guard.js';
import type { ModeElection } from './modes/mode.js';
import { acknowledgedGrant, type ReplicaWait } from './replica-ack.js';
import { pair, queueScript, runScript } from './lua.js';
import { randomToken } from './token.js';

/** Where the election waits for news of a release: the backend's notifier (at most maxWaitMs). */
export type WaitForRelease = (key: string, maxWaitMs: number, signal: AbortSignal) => Promise<void>;

/** A notification can be missed (a resubscribe): never trust one for longer than this. */
const fallbackMs = 2_000;

export function leaderKey(key: string): string {
  return siblingKey(key, 'leader');
}

/**
 * Leader election on the setnx lock (primitives.md §4.2): a term is the lock on the election's key,
 * the term number its fence (INCR in the same script), and the leader's id sits beside it in a
 * record that names the leader only while its token holds the lock. Renewal and release are the
 * setnx mode's compare-and-pexpire / compare-and-delete, so a term ends exactly as a lock does, and
 * core declares it lost at the local lease deadline, before the key can expire on the server.
 * Followers wait for the release message (one per release) and try again.
 */
export async function campaignSetnx(
  connection: Redis | Cluster,
  wait: WaitForRelease,
  request: CampaignRequest,
  deadline: number,
  signal: AbortSignal,
  replicaWait?: ReplicaWait,
): Promise<TermGrant | undefined> {
  for (;;) {
    const token = randomToken();
    const sentAt = Date.now();
    const keys = [request.key, fenceKey(request.key), leaderKey(request.key)] as const;
    const [elected, value] = pair(
      replicaWait === undefined
        ? await runScript(connection, 'elect-acquire', keys, [token, request.ttlMs, request.candidate])
        : await acknowledgedGrant(
            connection,
            replicaWait,
            (pipeline) => queueScript(pipeline, 'elect-acquire', keys, [token, request.ttlMs, request.candidate]),
            (reply) => pair(reply)[0] === 1,
            () => runScript(connection, 'setnx-release', [request.key, waitingKey(request.key)], [token, releaseChannel(request.key)]),
            { action: 'elect', key: request.key, backend: 'redis:setnx' },
          ),
    );
    if (elected === 1) return { key: request.key, owner: request.owner, token, fence: value, sentAt };
    request.onContended?.();
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0 || signal.aborted) return undefined;
    const woken = await wait(request.key, Math.max(1, Math.min(remainingMs, Math.max(0, value) + 1, fallbackMs)), signal).then(
      () => true,
      () => false,
    );
    if (!woken) return undefined;
  }
}

export async function leaderSetnx(connection: Redis | Cluster, key: string): Promise<string | undefined> {
  const id = await runScript(connection, 'elect-leader', [key, leaderKey(key)], []);
  return typeof id === 'string' ? id : id instanceof Buffer ? id.toString('utf8') : undefined;
}

/**
 * The election driver: campaign and leader of the mode's election, the leader's id with its term
 * (an operator script), and the terms kept by the driver of the holds they are (`keeper`).
 */
export function electionDriver(
  election: ModeElection,
  keeper: HoldDriver,
  guard: CallGuard,
  leaderInfo: (key: string) => Promise<{ id: string; term: number } | undefined>,
): ElectionDriver {
  const driver: ElectionDriver = {
    campaign: (request, deadline, signal) => guard.run('elect', request.key, () => election.campaign(request, deadline, signal), false),
    leader: (key) => guard.run('leader', key, () => election.leader(key)),
    leaderInfo: (key) => guard.run('leader', key, () => leaderInfo(key)),
    renew: (grant, ttlMs) => keeper.renew(grant, ttlMs),
    release: (grant) => keeper.release(grant),
  };
  if (keeper.renewMany) {
    const renewMany = keeper.renewMany;
    driver.renewMany = (grants, ttlMs) => renewMany(grants, ttlMs);
  }
  if (keeper.validate) {
    const validate = keeper.validate;
    driver.validate = (grant) => validate(grant);
  }
  return driver;
}
