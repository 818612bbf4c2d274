import type { AcquireRequest, Grant, HoldDriver, MultiAttemptResult, MultiDriver } from '@deadbolt/core/adapter';
import type { CallGuard } from './guard.js';
import type { Cluster, Redis } from 'ioredis';
import { fenceKey, releaseChannel, slotOf, waitingKey } from './keys.js';
import { runScript } from './lua.js';
import type { ModeMulti } from './modes/mode.js';
import { randomToken } from './token.js';

/**
 * Multi-key locks on Redis (primitives.md §4.1). Keys that share a hash slot (every key on a single
 * server) are taken in ONE script, all or nothing, each with its fence: unlike node-redlock's
 * multi-key script, which fails across Cluster slots, keys in several slots are taken slot group by
 * slot group in the one global (slot, key) order, and a busy group gives back the groups before it,
 * so the call never holds anything while it waits (core waits between attempts).
 */

/** The global order: by Cluster slot, then by key (code units). The same on every client. */
export function bySlotThenKey(keys: readonly string[]): string[] {
  return keys
    .map((key) => ({ key, slot: slotOf(key) }))
    .sort((a, b) => a.slot - b.slot || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ key }) => key);
}

export async function tryAcquireManySetnx(connection: Redis | Cluster, requests: readonly AcquireRequest[]): Promise<MultiAttemptResult> {
  const isCluster = (connection as { isCluster?: boolean }).isCluster === true;
  const groups = isCluster ? groupBySlot(requests) : [requests];
  const token = randomToken();
  const grants: Grant[] = [];
  for (const group of groups) {
    const keys = group.map((request) => request.key);
    const reply = (await runScript(connection, 'acquire-many', [...keys, ...keys.map(fenceKey)], [token, group[0]!.ttlMs])) as number[];
    if (Number(reply[0]) !== 1) {
      // Give back the groups taken before this one: the call holds nothing when it reports busy.
      await Promise.all(
        grants.map((grant) =>
          runScript(connection, 'setnx-release', [grant.key, waitingKey(grant.key)], [grant.token, releaseChannel(grant.key)]),
        ),
      );
      return { acquired: false, busyKey: keys[Number(reply[1]) - 1]!, retryAfterMs: Math.max(0, Number(reply[2])) };
    }
    group.forEach((request, index) => grants.push({ key: request.key, owner: request.owner, token, fence: Number(reply[index + 1]) }));
  }
  // Grants in the order of the requests (core's global order).
  const byKey = new Map(grants.map((grant) => [grant.key, grant]));
  return { acquired: true, grants: requests.map((request) => byKey.get(request.key)!) };
}

function groupBySlot(requests: readonly AcquireRequest[]): AcquireRequest[][] {
  const groups = new Map<number, AcquireRequest[]>();
  for (const request of requests) {
    const slot = slotOf(request.key);
    const group = groups.get(slot) ?? [];
    group.push(request);
    groups.set(slot, group);
  }
  return [...groups.entries()].sort(([a], [b]) => a - b).map(([, group]) => group);
}

/**
 * The multi driver: the (slot, key) order every mode takes keys in, and the mode's own all-or-nothing
 * step where it has one, its grants kept by `keeper` (absent: the mutex).
 */
export function multiDriver(multi: ModeMulti | undefined, keeper: HoldDriver | undefined, guard: CallGuard): MultiDriver {
  const keysOf = (requests: readonly AcquireRequest[]): string => requests.map((request) => request.key).join(', ');
  const tryAcquireMany = multi?.tryAcquireMany;
  const acquireMany = multi?.acquireMany;
  return {
    orderKeys: (keys) => bySlotThenKey(keys),
    ...(tryAcquireMany ? { tryAcquireMany: (requests) => guard.run('acquire', keysOf(requests), () => tryAcquireMany(requests)) } : {}),
    ...(acquireMany
      ? {
          acquireMany: (requests, deadline, signal) =>
            guard.run('acquire', keysOf(requests), () => acquireMany(requests, deadline, signal), false),
        }
      : {}),
    ...(keeper ? { keeper } : {}),
  } satisfies MultiDriver;
}
