import { createLockClient, InvalidArgumentError, type AcquireOptions, type Lock, type LockClient } from '@deadbolt/core';
import { now } from './history.js';
import { workUnderHold } from './hold.js';
import type { RegisterPort, WorkerConfig } from './worker-types.js';

export type { Primitive, RegisterPort, WorkerConfig } from './worker-types.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function clientFor(cfg: WorkerConfig): LockClient {
  const options = { ...(cfg.options ?? {}) };
  if (cfg.clockSkewMs !== undefined) {
    const skew = cfg.clockSkewMs;
    options.now = () => Date.now() + skew;
  }
  return createLockClient({ url: cfg.url, options, defaults: { autoRenew: true } });
}

/**
 * Whether a hold writes the registers: not a reader (it only reads), and not a semaphore permit
 * (several holders are legitimately inside at once, so "the highest fence wins" would refuse
 * honest writes; a semaphore guards a capacity, and its check is the count of holders).
 */
function writes(cfg: WorkerConfig): boolean {
  const kind = cfg.primitive?.kind ?? 'lock';
  return kind !== 'read' && kind !== 'semaphore';
}

/** One hold of whatever this client takes (a lock, a read or write side, a semaphore permit). */
function acquireOne(client: LockClient, cfg: WorkerConfig, options: AcquireOptions): Promise<Lock> {
  const p = cfg.primitive ?? { kind: 'lock' };
  switch (p.kind) {
    case 'read':
      return client.readWriteLock(cfg.key).read.acquire(options);
    case 'write':
      return client.readWriteLock(cfg.key).write.acquire(options);
    case 'semaphore':
      return client.semaphore(cfg.key, { permits: p.permits }).acquire(options);
    case 'election':
      throw new InvalidArgumentError('primitive', 'an election client runs runElectionWorker, not runWorker');
    default:
      return client.acquire(cfg.key, options);
  }
}

/**
 * One client's loop: acquire with a fence, read-modify-write both registers, release. Obeys
 * lock.signal: a holder told 'lost' does not write. It checks the signal before the work, as a real
 * program does, so a pause between the check and the write (Kleppmann's GC pause) still produces
 * the stale write the fenced store must refuse.
 */
export async function runWorker(cfg: WorkerConfig, port: RegisterPort, client: LockClient = clientFor(cfg)): Promise<void> {
  try {
    while (now() < cfg.until) {
      let lock;
      try {
        lock = await acquireOne(client, cfg, {
          ttlMs: cfg.ttlMs,
          waitMs: Math.max(1, Math.floor(Math.min(cfg.waitMs, cfg.until - now()))),
          ...(cfg.autoRenew !== undefined ? { autoRenew: cfg.autoRenew } : {}),
        });
      } catch (error) {
        // Bad input is the harness's bug, not the backend's behaviour: fail loudly.
        if (error instanceof InvalidArgumentError) throw error;
        if (process.env.DEADBOLT_COMPARE_DEBUG) process.stderr.write(`${cfg.name}: ${String(error)}\n`);
        // Timeout or unavailable backend: that is unavailability, measured as a gap by the checker.
        await sleep(20);
        continue;
      }
      await workUnderHold(client, cfg, port, {
        signal: lock.signal,
        fence: lock.fence,
        writes: writes(cfg),
        ...(cfg.primitive?.kind === 'read' || cfg.primitive?.kind === 'write' ? { mode: cfg.primitive.kind } : {}),
        letGo: () => lock.release(),
      });
      // Without a short random pause the releaser re-acquires in the same tick and starves the others.
      await sleep(5 + Math.random() * 30);
    }
  } finally {
    await client.close().catch(() => undefined);
  }
}
