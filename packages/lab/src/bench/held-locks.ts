import { createLockClient, type LockBackend } from '@deadbolt/core';
import type { Grant } from '@deadbolt/core/adapter';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { countRenewals, fullGc, heapWhileHeld, makeBackend } from './scale.js';
import { round, summarizeLatencies } from './stats.js';
import type { HeldPoint } from './scaling-results.js';

/** Counts the commands a server has run, from its own counters; `read()` resolves with the running total. */
interface CommandCounter {
  read(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Redis: the top-level commands in INFO commandstats. Commands a script runs are counted there too
 * (a renewal script's PEXPIRE shows as pexpire), so the count is the script calls (eval*, evalsha*,
 * fcall*) plus every command no script of ours runs; the INFO calls this counter makes are taken off.
 */
async function redisCommandCounter(url: string): Promise<CommandCounter> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  let infoCalls = 0;
  const insideScripts = new Set([
    'get',
    'set',
    'del',
    'pexpire',
    'pttl',
    'incr',
    'hget',
    'hset',
    'hdel',
    'hincrby',
    'publish',
    'lpush',
    'rpush',
    'lpop',
    'lrange',
    'lrem',
    'zadd',
    'zrem',
    'zrange',
    'zscore',
    'exists',
    'expire',
    'time',
    'llen',
    'lindex',
    'zcard',
    'pexpireat',
    'hgetall',
    'hlen',
    'hexists',
    'lset',
    'ltrim',
    'zrangebyscore',
    'zremrangebyscore',
    'incrby',
    'setex',
    'psetex',
    'mget',
  ]);
  return {
    async read() {
      const text = (await redis.info('commandstats')) as string;
      infoCalls += 1;
      let total = 0;
      for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        const name = match[1]!.toLowerCase();
        if (!insideScripts.has(name.split('|')[0]!)) total += Number(match[2]);
      }
      return total - infoCalls;
    },
    async close() {
      redis.disconnect();
    },
  };
}

function commandCounterFor(url: string): Promise<CommandCounter> | undefined {
  const scheme = new URL(url).protocol.replace(/:$/, '');
  return scheme === 'redis' || scheme === 'rediss' ? redisCommandCounter(url) : undefined;
}

interface RenewalTimes {
  readonly durations: number[];
  /** Renewal calls that threw (a timeout, a dropped connection): core retries them sooner. */
  errors: number;
}

/** Times every renewal call (renew, renewMany) the client makes on this backend, in place. */
function timeRenewals(backend: LockBackend): RenewalTimes {
  const times: RenewalTimes = { durations: [], errors: 0 };
  const { durations } = times;
  const failed = (error: unknown): never => {
    times.errors += 1;
    throw error;
  };
  const mutable = backend as { renew: LockBackend['renew']; renewMany?: LockBackend['renewMany'] };
  const renew = backend.renew.bind(backend);
  mutable.renew = async (grant: Grant, ttlMs: number) => {
    const started = performance.now();
    try {
      return await renew(grant, ttlMs).catch(failed);
    } finally {
      durations.push(performance.now() - started);
    }
  };
  const renewMany = backend.renewMany?.bind(backend);
  if (renewMany) {
    mutable.renewMany = async (grants: readonly Grant[], ttls: readonly number[]) => {
      const started = performance.now();
      try {
        return await renewMany(grants, ttls).catch(failed);
      } finally {
        durations.push(performance.now() - started);
      }
    };
  }
  return times;
}

export interface HeldSettings {
  readonly locks: number;
  readonly ttlMs: number;
  readonly periods: number;
  readonly keyspace: string;
}

/**
 * Holds `locks` locks with auto-renew for `periods` ttl periods and measures, over that fixed
 * window: heap per held lock (after a full GC, needs --expose-gc), renewal calls per tick on the
 * client and commands per tick at the server, client CPU, and renewal-call latency.
 */
export async function runHeld(url: string, backendLabel: string, mode: string, settings: HeldSettings): Promise<HeldPoint> {
  const inner = await makeBackend(url);
  const renewals = timeRenewals(inner);
  const counted = countRenewals(inner);
  const client = createLockClient({ backend: counted.backend, prefix: `${settings.keyspace}:` });
  const counter = await commandCounterFor(url);
  const gc = (globalThis as { gc?: () => void }).gc;
  try {
    await (await client.acquire('warm-up', { ttlMs: settings.ttlMs, waitMs: 0 })).release();
    const heapBefore = fullGc(gc);
    const acquiredAt = performance.now();
    const locks = [];
    for (let start = 0; start < settings.locks; start += 500) {
      const count = Math.min(500, settings.locks - start);
      locks.push(
        ...(await Promise.all(
          Array.from({ length: count }, (_, i) => client.acquire(`k${start + i}`, { ttlMs: settings.ttlMs, autoRenew: true, waitMs: 0 })),
        )),
      );
    }
    const acquireMs = performance.now() - acquiredAt;
    const lostWhileAcquiring = locks.filter((lock) => !lock.held).length;
    const renewalErrorsWhileAcquiring = renewals.errors;
    renewals.durations.length = 0;
    const errorsBefore = renewals.errors;
    const commandsBefore = await counter?.read();
    const callsBefore = counted.calls();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await delay(settings.ttlMs * settings.periods);
    const windowMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const calls = counted.calls() - callsBefore;
    const commandsAfter = await counter?.read();
    const renewalLatency = summarizeLatencies([...renewals.durations]);
    const renewalErrors = renewals.errors - errorsBefore;
    const lost = locks.filter((lock) => !lock.held).length;
    const heapPerLock = ((await heapWhileHeld(counted, gc, settings.ttlMs)) - heapBefore) / settings.locks;
    const ticks = Math.max(1, Math.round(windowMs / (settings.ttlMs / 3)));
    // In batches, like the acquires: 100,000 releases at once on one connection outlast the command timeout.
    for (let start = 0; start < locks.length; start += 500) {
      await Promise.allSettled(locks.slice(start, start + 500).map((lock) => lock.release()));
    }
    return {
      backend: backendLabel,
      mode,
      locks: settings.locks,
      ttlMs: settings.ttlMs,
      lost,
      lostWhileAcquiring,
      renewalErrorsWhileAcquiring,
      heapBytesPerLock: Math.round(heapPerLock),
      clientRenewalCallsPerTick: round(calls / ticks, 2),
      serverCommandsPerTick:
        commandsBefore === undefined || commandsAfter === undefined ? null : round((commandsAfter - commandsBefore) / ticks, 2),
      clientCpuPercent: round(((cpu.user + cpu.system) / 1000 / windowMs) * 100, 1),
      renewalP50Ms: renewalLatency.p50Ms,
      renewalP99Ms: renewalLatency.p99Ms,
      renewalErrors,
      windowMs: Math.round(windowMs),
      acquirePerSec: round(settings.locks / (acquireMs / 1000), 1),
    };
  } finally {
    await client.close();
    await counter?.close();
  }
}
