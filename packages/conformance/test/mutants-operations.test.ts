// Test-only broken backends for the operations group: each case must catch its mutant.
import { createLockClient } from '@deadbolt/core';
import { MemoryBackend, memoryCapabilities, memoryStore, type BackendInspection } from '@deadbolt/core/adapter';
import { describe, expect, it } from 'vitest';
import {
  opsForceRelease,
  opsInspectHolder,
  opsInspectPermits,
  opsInspectReaders,
  opsList,
  opsObserve,
  runCase,
  type ConformanceCase,
} from '../src/index.js';
import type { Mutant } from './memory-mutants.js';

/** Reports the lease left in seconds where the API promises milliseconds. */
class TtlInSeconds extends MemoryBackend {
  override async inspect(key: string): Promise<BackendInspection> {
    const seen = await super.inspect(key);
    return { ...seen, holders: seen.holders.map((hold) => ({ ...hold, ttlLeftMs: Math.floor((hold.ttlLeftMs ?? 0) / 1_000) })) };
  }
}

/** Reads the plain lock only: read-write locks and semaphores, stored apart, are never seen. */
class MutexOnly extends MemoryBackend {
  override async inspect(key: string): Promise<BackendInspection> {
    const seen = await super.inspect(key);
    return { holders: seen.holders.filter((hold) => hold.kind === 'mutex') };
  }
}

/** Says it released, and deleted nothing. */
class ForceReleaseNothing extends MemoryBackend {
  override async forceRelease(): Promise<boolean> {
    return true;
  }
}

/** Deletes the hold like an expiry would: no word to the holder, no marker to read at its renewal. */
class ForceReleaseSilently extends MemoryBackend {
  override async forceRelease(key: string): Promise<boolean> {
    const held = this.store.live(key, Date.now()) !== undefined;
    if (held) this.store.delete(key);
    return held;
  }
}

/** Lists every key, the prefix ignored. */
class ListIgnoresPrefix extends MemoryBackend {
  override listKeys(): AsyncIterable<string> {
    return super.listKeys('');
  }
}

/** Reports the leader without its term (as a backend with no leaderInfo would): terms cannot be compared. */
class LeaderWithoutTerm extends MemoryBackend {
  override async leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    const info = await super.leaderInfo(key);
    return info === undefined ? undefined : { id: info.id, term: 1 };
  }
}

const mutants: [string, Mutant, ConformanceCase][] = [
  ['an inspect that reports the ttl in seconds', TtlInSeconds, opsInspectHolder],
  ['an inspect that reads the plain lock only', MutexOnly, opsInspectPermits],
  ['an inspect that reads the plain lock only', MutexOnly, opsInspectReaders],
  ['a forceRelease that deletes nothing', ForceReleaseNothing, opsForceRelease],
  ['a forceRelease that tells the holder nothing', ForceReleaseSilently, opsForceRelease],
  ['a list that ignores the prefix', ListIgnoresPrefix, opsList],
  ['a leader read whose term never moves', LeaderWithoutTerm, opsObserve],
];

describe('the operations group catches broken operator methods', () => {
  for (const [what, Backend, testCase] of mutants) {
    it(`${what} fails "${testCase.title}"`, async () => {
      const store = memoryStore(`mutant-${what}-${testCase.title}`);
      const error = await runCase(testCase, {
        name: `mutant: ${what}`,
        capabilities: memoryCapabilities,
        ttlMs: 1_500,
        create: (_, { prefix }) => createLockClient({ backend: new Backend(store, 'memory-mutant'), prefix }),
      }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
      expect(error).toBeInstanceOf(Error);
    });
  }

  it('the unbroken memory backend passes every case (the control)', async () => {
    const store = memoryStore('mutant-control-operations');
    for (const testCase of [opsInspectHolder, opsInspectPermits, opsInspectReaders, opsForceRelease, opsList, opsObserve]) {
      await runCase(testCase, {
        name: 'control',
        capabilities: memoryCapabilities,
        ttlMs: 1_500,
        create: (_, { prefix }) => createLockClient({ backend: new MemoryBackend(store, 'memory'), prefix }),
      });
    }
  });
});
