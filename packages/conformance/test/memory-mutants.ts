// Pieces the mutant tests on the memory backend share: broken backends that more than one case catches.
import { MemoryBackend, type AcquireRequest, type AttemptResult, type Grant, type MemoryStore } from '@deadbolt/core/adapter';

export type Mutant = new (store: MemoryStore, name: string) => MemoryBackend;

/** Stores every key under another name: what a key-mapping adapter does. */
export function mapsKeys(map: (key: string) => string): Mutant {
  return class extends MemoryBackend {
    override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
      return super.tryAcquire({ ...request, key: map(request.key) });
    }
    override release(grant: Grant): Promise<boolean> {
      return super.release({ ...grant, key: map(grant.key) });
    }
    override renew(grant: Grant, ttlMs: number): Promise<boolean> {
      return super.renew({ ...grant, key: map(grant.key) }, ttlMs);
    }
    override waitForChange(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void> {
      return super.waitForChange(map(key), maxWaitMs, signal);
    }
  };
}

/** Reports a validity in seconds where core reads milliseconds: core trusts the lease 1,000 times too long. */
export class ValidityInSecondsReadAsMs extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const result = await super.tryAcquire(request);
    if (result.acquired) result.grant.validUntil = Date.now() + request.ttlMs * 1_000;
    return result;
  }
}
