import { createLockClient, type LockBackend } from '@deadbolt/core';
import { findBackendFactory, knownBackendPackages, type Grant } from '@deadbolt/core/adapter';
import { setTimeout as delay } from 'node:timers/promises';
import { round } from './stats.js';
import type { BenchRow } from './subject.js';

export interface ScaleSettings {
  readonly locks: number;
  readonly ttlMs: number;
  readonly periods: number;
  readonly keyspace: string;
  /**
   * Server counters (etcd: keep-alive messages, leases granted) read before the locks are taken,
   * and around the hold: a session-leased backend renews on the server, not through renew().
   */
  readonly probe?: () => Promise<Record<string, number>>;
}

export interface CountedBackend {
  readonly backend: LockBackend;
  calls(): number;
  grants(): number;
  /** Resolves when no renewal is in flight (a batch of 10,000 pending commands weighs ~15 MB). */
  renewalsIdle(): Promise<void>;
}

/** Wraps a backend to count renewal round trips and see when none is in flight; the rest passes through. */
export function countRenewals(backend: LockBackend): CountedBackend {
  let calls = 0;
  let grants = 0;
  let inFlight = 0;
  let idleWaiters: (() => void)[] = [];
  const track = <T>(call: Promise<T>): Promise<T> => {
    inFlight += 1;
    return call.finally(() => {
      inFlight -= 1;
      if (inFlight > 0) return;
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const wake of waiters) wake();
    });
  };
  const wrapped: LockBackend = {
    name: backend.name,
    capabilities: backend.capabilities,
    ...(backend.defaultPrefix === undefined ? {} : { defaultPrefix: backend.defaultPrefix }),
    tryAcquire: (request) => backend.tryAcquire(request),
    ...(backend.acquire ? { acquire: backend.acquire.bind(backend) } : {}),
    renew: (grant: Grant, ttlMs: number) => {
      calls += 1;
      grants += 1;
      return track(backend.renew(grant, ttlMs));
    },
    ...(backend.renewMany
      ? {
          renewMany: (list: readonly Grant[], ttls: readonly number[]) => {
            calls += 1;
            grants += list.length;
            return track(backend.renewMany!(list, ttls));
          },
        }
      : {}),
    release: (grant) => backend.release(grant),
    ...(backend.waitForChange ? { waitForChange: backend.waitForChange.bind(backend) } : {}),
    close: () => backend.close(),
  };
  return {
    backend: wrapped,
    calls: () => calls,
    grants: () => grants,
    renewalsIdle: () => (inFlight === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
  };
}

/**
 * The probe's deltas: leases granted while taking and holding the locks, and keep-alive messages
 * per renewal tick during the hold (one lease kept alive once a tick is 1).
 */
function serverCounters(
  atStart: Record<string, number> | undefined,
  atHold: Record<string, number> | undefined,
  atEnd: Record<string, number> | undefined,
  ticks: number,
): Record<string, number> {
  if (atStart === undefined || atHold === undefined || atEnd === undefined) return {};
  return {
    serverLeasesGranted: (atEnd['leasesGranted'] ?? 0) - (atStart['leasesGranted'] ?? 0),
    serverKeepAlivesPerTick: round(((atEnd['keepAlives'] ?? 0) - (atHold['keepAlives'] ?? 0)) / ticks, 2),
  };
}

/** Two passes: objects kept alive by finalizers or weak references only go on the second. */
export function fullGc(gc: (() => void) | undefined): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

/**
 * The heap while holding, sampled right after a renewal round settles (a sample taken while a
 * batch is in flight also counts its pending commands: one run read setnx at 0.7 KB per lock, the
 * next at 2.0 KB), the least of a few such samples.
 */
export async function heapWhileHeld(counted: CountedBackend, gc: (() => void) | undefined, ttlMs: number): Promise<number> {
  let least = Number.POSITIVE_INFINITY;
  for (let sample = 0; sample < 3; sample++) {
    if (sample > 0) await delay(ttlMs / 5);
    await counted.renewalsIdle();
    least = Math.min(least, fullGc(gc));
  }
  return least;
}

export async function makeBackend(url: string): Promise<LockBackend> {
  const parsed = new URL(url);
  const scheme = parsed.protocol.replace(/:$/, '');
  const packageName = knownBackendPackages[scheme];
  if (packageName) await import(packageName);
  const factory = findBackendFactory(scheme);
  if (!factory) throw new Error(`no backend registered for ${scheme}`);
  return factory({ url: parsed, urlText: url, options: {} });
}

/**
 * Holds `locks` locks with auto-renew for `periods` ttl periods: renewal round trips per tick,
 * client CPU, heap per held lock, and whether every lock survived.
 */
export async function runScale(url: string, mode: string, backendLabel: string, settings: ScaleSettings): Promise<BenchRow> {
  const counted = countRenewals(await makeBackend(url));
  const client = createLockClient({ backend: counted.backend, prefix: `${settings.keyspace}:` });
  const gc = (globalThis as { gc?: () => void }).gc;
  try {
    // The baseline is taken with the client connected and its scripts loaded (one lock held and
    // released first): the figure is what holding costs, not the connection's one-off buffers.
    await (await client.acquire('warm-up', { ttlMs: settings.ttlMs, waitMs: 0 })).release();
    const heapBefore = fullGc(gc);
    const atStart = await settings.probe?.();
    const acquiredAt = performance.now();
    const locks = [];
    const batch = 500;
    for (let start = 0; start < settings.locks; start += batch) {
      const count = Math.min(batch, settings.locks - start);
      locks.push(
        ...(await Promise.all(
          Array.from({ length: count }, (_, i) => client.acquire(`k${start + i}`, { ttlMs: settings.ttlMs, autoRenew: true, waitMs: 0 })),
        )),
      );
    }
    const acquireMs = performance.now() - acquiredAt;
    const cpuBefore = process.cpuUsage();
    const callsBefore = counted.calls();
    const atHold = await settings.probe?.();
    const holdStarted = performance.now();
    await delay(settings.ttlMs * settings.periods);
    const holdSeconds = (performance.now() - holdStarted) / 1000;
    const atEnd = await settings.probe?.();
    const cpu = process.cpuUsage(cpuBefore);
    const renewalCalls = counted.calls() - callsBefore;
    const lost = locks.filter((lock) => !lock.held).length;
    const heapPerLock = ((await heapWhileHeld(counted, gc, settings.ttlMs)) - heapBefore) / settings.locks;
    // Renewal ticks: one every ttl/3 per lease generation; a batched client needs ~1 call per tick.
    const ticks = Math.max(1, Math.round((holdSeconds * 1000) / (settings.ttlMs / 3)));
    // In batches, as they were taken: 10,000 releases at once made a loaded etcd member answer
    // "too many requests" (its applied index fell 5,000 entries behind).
    for (let start = 0; start < locks.length; start += batch) {
      await Promise.all(locks.slice(start, start + batch).map((lock) => lock.release()));
    }
    return {
      backend: backendLabel,
      mode,
      workload: 'scale-10k',
      subject: 'deadbolt',
      opsPerSec: round(settings.locks / (acquireMs / 1000), 1),
      ownerChangesPerSec: null,
      p50Ms: Number.NaN,
      p99Ms: Number.NaN,
      maxMs: Number.NaN,
      fairness: null,
      ratioToRaw: null,
      extra: {
        locks: settings.locks,
        lost,
        renewalCallsPerTick: round(renewalCalls / ticks, 2),
        renewedGrants: counted.grants(),
        clientCpuPercent: round(((cpu.user + cpu.system) / 1000 / (holdSeconds * 1000)) * 100, 1),
        heapBytesPerLock: Math.round(heapPerLock),
        stillHeldAfterRelease: client.heldCount,
        ...serverCounters(atStart, atHold, atEnd, ticks),
      },
    };
  } finally {
    await client.close();
  }
}
