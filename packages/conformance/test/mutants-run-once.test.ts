// Test-only broken run-once backends and clients: each runOnce case of the suite fails on one of them.
import { createLockClient, type LockClient, type RunOnceOptions } from '@deadbolt/core';
import { MemoryBackend, memoryCapabilities, memoryStore, type AcquireRequest, type Grant } from '@deadbolt/core/adapter';
import { describe, expect, it } from 'vitest';
import {
  runCase,
  runOnceAbortsAtMost,
  runOnceBadInput,
  runOnceCrashFreesAtMost,
  runOnceExactlyOne,
  runOnceHoldsAtLeast,
  runOnceRecordsLastRun,
  type ConformanceCase,
} from '../src/index.js';

/** Claims without looking at the holder: every caller wins. */
class ClaimWithoutCheck extends MemoryBackend {
  async claimRun(request: AcquireRequest): Promise<Grant | undefined> {
    return this.take(request, Date.now());
  }
}

/** Releases as soon as fn settles: a fast job frees the name for a replica that fires a little late. */
class ShortenReleasesAtOnce extends MemoryBackend {
  shortenRun(grant: Grant): Promise<boolean> {
    return this.release(grant);
  }
}

/** Leaves the lease at lockAtMostForMs when fn settles early. */
class ShortenKeepsFullLease extends MemoryBackend {
  async shortenRun(): Promise<boolean> {
    return true;
  }
}

/** Sets the lease's end as an instant read on a client clock that runs behind the server's. */
class ShortenOnClientClock extends MemoryBackend {
  async shortenRun(grant: Grant, keepMs: number): Promise<boolean> {
    const holder = this.store.live(grant.key, Date.now());
    if (holder?.token !== grant.token) return false;
    const clientNow = Date.now() - 2 * keepMs;
    holder.expiresAt = clientNow + keepMs;
    return true;
  }
}

/** Claims for far longer than lockAtMostForMs: a dead winner keeps the name. */
class ClaimOutlivesAtMost extends MemoryBackend {
  async claimRun(request: AcquireRequest): Promise<Grant | undefined> {
    const result = await this.tryAcquire({ ...request, ttlMs: request.ttlMs * 100 });
    return result.acquired ? result.grant : undefined;
  }
}

/** Reads the record from this process's own copy: another replica sees nothing. */
class LastRunCachedLocally extends MemoryBackend {
  private readonly local = new Map<string, string>();
  override async saveRun(key: string, runId: string, record: string, replaces?: string): Promise<boolean> {
    this.local.set(key, record);
    return super.saveRun(key, runId, record, replaces);
  }
  override async loadRun(key: string): Promise<string | undefined> {
    return this.local.get(key);
  }
}

type Wrap = (inner: LockClient) => LockClient['runOnce'];

/** fn's signal never aborts at lockAtMostForMs (only through the caller's). */
const noAtMostAbort: Wrap = (inner) => (name, fn, options) =>
  inner.runOnce(name, (run) => fn({ fence: run.fence, signal: options.signal ?? new AbortController().signal }), options);

/** Takes lockAtLeastForMs > lockAtMostForMs as lockAtMostForMs, and an empty name as a name. */
const lenientInput: Wrap = (inner) => (name, fn, options: RunOnceOptions) =>
  inner.runOnce(name === '' ? 'unnamed' : name, fn, {
    ...options,
    lockAtLeastForMs: Math.min(options.lockAtLeastForMs, options.lockAtMostForMs),
  });

/** A client whose runOnce is replaced, everything else the real one. */
function wrapped(inner: LockClient, wrap: Wrap): LockClient {
  const runOnce = wrap(inner);
  return new Proxy(inner, {
    get(target, property) {
      if (property === 'runOnce') return runOnce;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

type Mutant = { backend: new (store: ReturnType<typeof memoryStore>, name: string) => MemoryBackend; wrap?: Wrap };

const mutants: [string, Mutant, ConformanceCase][] = [
  ['a claim that does not check the holder', { backend: ClaimWithoutCheck }, runOnceExactlyOne],
  ['a runOnce that releases at once when fn finishes', { backend: ShortenReleasesAtOnce }, runOnceHoldsAtLeast],
  ['a shorten that keeps the full lease', { backend: ShortenKeepsFullLease }, runOnceHoldsAtLeast],
  ['a shorten that sets the end by a client clock behind the server', { backend: ShortenOnClientClock }, runOnceHoldsAtLeast],
  ['a claim that outlives lockAtMostForMs', { backend: ClaimOutlivesAtMost }, runOnceCrashFreesAtMost],
  ['an fn signal that ignores lockAtMostForMs', { backend: MemoryBackend, wrap: noAtMostAbort }, runOnceAbortsAtMost],
  ['a lastRun cached locally', { backend: LastRunCachedLocally }, runOnceRecordsLastRun],
  ['a runOnce that accepts bad input', { backend: MemoryBackend, wrap: lenientInput }, runOnceBadInput],
];

describe('the runOnce cases catch broken run-once jobs', () => {
  for (const [what, mutant, testCase] of mutants) {
    const store = memoryStore(`mutant-run-once-${what}`);
    const backends = new WeakMap<LockClient, MemoryBackend>();
    it(`${what} fails "${testCase.title}"`, async () => {
      const options = {
        name: `mutant: ${what}`,
        capabilities: memoryCapabilities,
        create: (_: unknown, { prefix }: { prefix: string }) => {
          const backend = new mutant.backend(store, 'memory-mutant');
          const inner = createLockClient({ backend, prefix });
          const client = mutant.wrap ? wrapped(inner, mutant.wrap) : inner;
          backends.set(client, backend);
          return client;
        },
        // A crash: the backend stops answering, nothing is released or recorded.
        kill: async (client: LockClient) => {
          await backends.get(client)?.close();
        },
      };
      const error = await runCase(testCase, options).then(
        () => undefined,
        (e: unknown) => e,
      );
      console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
      expect(error).toBeInstanceOf(Error);
    });
  }
});
