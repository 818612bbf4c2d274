import type { LockHolder } from '@deadbolt/core';
import { forcedMarkerMs, type BackendInspection, type Grant, type OperationsDriver } from '@deadbolt/core/adapter';
import { Cluster, type Redis } from 'ioredis';
import { leaderKey } from './election.js';
import type { CallGuard } from './guard.js';
import { fenceKey, releaseChannel, siblingKey } from './keys.js';
import { kindKeys } from './modes/fair-kinds.js';
import { runScript } from './lua.js';

/** Every structure of one key (lua/operations.ts: KEYS[1]..[13]), all in the key's hash slot. */
function operationKeys(key: string): string[] {
  return [
    key,
    fenceKey(key),
    siblingKey(key, 'queue'),
    siblingKey(key, 'waiters'),
    ...kindKeys(key, 'rw').slice(0, 4),
    ...kindKeys(key, 'sem').slice(0, 4),
    forcedKey(key),
  ];
}

export function forcedKey(key: string): string {
  return siblingKey(key, 'forced');
}

/** The suffixes of the structures beside a lock (keys.ts, kinds, election, this file): never a lock of their own. */
const siblingSuffix = /:(fence|waiting|leader|queue|waiters|forced|(rw|sem):(holders|meta|queue|waiters|fence))$/;
/** A read-write lock's or a semaphore's meta hash of an untagged key: `{<key>}:rw:meta`. */
const kindMeta = /^\{(.*)\}:(rw|sem):meta$/;

const text = (value: unknown): string => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value));

function parseInspection(reply: unknown): BackendInspection {
  const items = (reply as unknown[]).map(text);
  const holders: LockHolder[] = [];
  for (let index = 1; index + 3 < items.length + 1; index += 4) {
    const [kind, owner, fence, ttl] = items.slice(index, index + 4) as [LockHolder['kind'], string, string, string];
    holders.push({
      kind,
      ...(owner === '' ? {} : { owner }),
      ...(fence === '' ? {} : { fence: Number(fence) }),
      ttlLeftMs: Number(ttl),
    });
  }
  const waiters = Number(items[0]);
  return waiters > 0 ? { holders, waiters } : { holders };
}

/** Escapes SCAN MATCH's glob characters. */
function globEscape(text: string): string {
  return text.replace(/[\\*?[\]]/g, '\\$&');
}

/**
 * The operator API on Redis, over the backend's command connections: one for a single server or a
 * Cluster, the masters for RedLock (inspect counts a hold only where a majority of masters agree;
 * forceRelease runs on every master).
 */
export class RedisOperations {
  constructor(
    private readonly connections: readonly (Redis | Cluster)[],
    /** getset: its expiry is on the clients' clocks. */
    private readonly clientClock: (() => number) | undefined,
  ) {}

  async inspect(key: string): Promise<BackendInspection> {
    const keys = operationKeys(key);
    const now = this.clientClock === undefined ? '' : String(this.clientClock());
    const replies = await Promise.all(this.connections.map((connection) => runScript(connection, 'ops-inspect', keys, [now])));
    if (replies.length === 1) return parseInspection(replies[0]);
    // RedLock: the lock is held only where a majority of masters have it; its lease is the shortest of theirs.
    const holding = replies.map(parseInspection).filter((one) => one.holders.length > 0);
    if (holding.length < Math.floor(replies.length / 2) + 1) return { holders: [] };
    return { holders: [{ kind: 'mutex', ttlLeftMs: Math.min(...holding.map((one) => one.holders[0]!.ttlLeftMs ?? 0)) }] };
  }

  async forceRelease(key: string, by: string): Promise<boolean> {
    const keys = operationKeys(key);
    const replies = await Promise.all(
      this.connections.map((connection) => runScript(connection, 'ops-force', keys, [by, forcedMarkerMs, releaseChannel(key)])),
    );
    return replies.some((removed) => Number(removed) > 0);
  }

  async forcedBy(grant: Grant): Promise<string | undefined> {
    const replies = await Promise.all(this.connections.map((connection) => connection.hget(forcedKey(grant.key), grant.token)));
    return replies.find((by): by is string => typeof by === 'string');
  }

  /** The setnx election's leader (its record) or the fair one's (in the lock's token), with the fence as its term. */
  async leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    const connection = this.connections[0]!;
    const reply = (await runScript(connection, 'ops-leader', [key, fenceKey(key), leaderKey(key)], [])) as unknown[];
    const [value, record, fence] = reply.map(text) as [string, string, string];
    if (value === '' || fence === '') return undefined;
    const fair = /^[^.]+\.\d+\.e[0-9a-z]+~([A-Za-z0-9_-]*)$/.exec(value)?.[1];
    if (fair !== undefined) return { id: Buffer.from(fair, 'base64url').toString('utf8'), term: Number(fence) };
    if (record.startsWith(`${value}\n`)) return { id: record.slice(value.length + 1), term: Number(fence) };
    return undefined;
  }

  /**
   * SCAN with MATCH on `prefix` (every master of a Cluster), plus the meta hashes of read-write locks
   * and semaphores, which an untagged key keeps under `{<key>}:...`. Keys that end in a sibling's
   * suffix (`:fence`, `:queue`, ...) are never listed as locks of their own.
   */
  async *listKeys(prefix: string): AsyncIterable<string> {
    const seen = new Set<string>();
    const patterns = [`${globEscape(prefix)}*`, `{${globEscape(prefix)}*}:rw:meta`, `{${globEscape(prefix)}*}:sem:meta`];
    for (const node of await this.scanNodes()) {
      for (const pattern of patterns) {
        for await (const batch of node.scanStream({ match: pattern, count: 1_000 }) as AsyncIterable<string[]>) {
          for (const found of batch) {
            const lock = kindMeta.exec(found)?.[1] ?? (siblingSuffix.test(found) ? undefined : found);
            if (lock === undefined || !lock.startsWith(prefix) || seen.has(lock)) continue;
            seen.add(lock);
            yield lock;
          }
        }
      }
    }
  }

  /** Every master: a Cluster's, RedLock's (a key on a minority only is then left out by inspect). */
  private async scanNodes(): Promise<Redis[]> {
    // A Cluster client that has sent nothing yet knows no nodes: one command makes it learn the slots.
    await Promise.all(
      this.connections.map((connection) =>
        connection instanceof Cluster && connection.status !== 'ready' ? connection.ping() : undefined,
      ),
    );
    return this.connections.flatMap((connection) => (connection instanceof Cluster ? connection.nodes('master') : [connection]));
  }
}

/** The operations driver: the operator methods, each through the call guard. */
export function operationsDriver(ops: RedisOperations, guard: CallGuard): OperationsDriver {
  return {
    inspect: (key) => guard.run('inspect', key, () => ops.inspect(key)),
    forceRelease: (key, by) => guard.run('forceRelease', key, () => ops.forceRelease(key, by)),
    forcedBy: (grant: Grant) => guard.run('renew', grant.key, () => ops.forcedBy(grant)),
    listKeys: (prefix) => ops.listKeys(prefix),
  };
}
