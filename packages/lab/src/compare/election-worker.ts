import { InvalidArgumentError, UnsupportedOperationError, type LockClient } from '@deadbolt/core';
import { now } from './history.js';
import { workUnderHold } from './hold.js';
import { clientFor, runWorker, type RegisterPort, type WorkerConfig } from './workload.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * One participant of a leader election, shaped like the lock loop: each term is one interval,
 * during which the leader reads the registers, works for holdMs and writes with its term as the
 * fence (the election guide's advice: pass the term to the resources the leader writes). The term ends
 * when the body returns; the next iteration is a new candidacy. Obeys term.signal like a lock's.
 */
export async function runElectionWorker(cfg: WorkerConfig, port: RegisterPort, client: LockClient = clientFor(cfg)): Promise<void> {
  const over = new AbortController();
  const timer = setTimeout(() => over.abort(new Error('the run is over')), Math.max(0, cfg.until - now()));
  try {
    while (now() < cfg.until) {
      const election = client.elect(cfg.key, { id: cfg.name, ttlMs: cfg.ttlMs, signal: over.signal });
      try {
        for await (const term of election) {
          // The term ends when the body returns: nothing to let go of here.
          await workUnderHold(client, cfg, port, { signal: term.signal, fence: term.term, writes: true, letGo: async () => {} });
          if (now() >= cfg.until) break; // leaving the loop resigns
        }
      } catch (error) {
        // Bad input or a backend without elections is the harness's problem, not the backend's behaviour.
        if (error instanceof InvalidArgumentError || error instanceof UnsupportedOperationError) throw error;
        if (over.signal.aborted) break;
        if (process.env.DEADBOLT_COMPARE_DEBUG) process.stderr.write(`${cfg.name}: ${String(error)}\n`);
        await sleep(20); // unavailable: measured as a gap by the checker
      } finally {
        await election.resign().catch(() => undefined);
      }
    }
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => undefined);
  }
}

/** The loop for whatever the client takes. */
export function runClient(cfg: WorkerConfig, port: RegisterPort): Promise<void> {
  return cfg.primitive?.kind === 'election' ? runElectionWorker(cfg, port) : runWorker(cfg, port);
}
