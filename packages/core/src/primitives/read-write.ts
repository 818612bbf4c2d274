import type { LockKind } from '../contract/requests.js';
import type { Acquirable, ReadWriteLock } from '../api/primitives.js';
import type { Engine } from '../engine/engine.js';
import type { AcquireOptions, Lock } from '../api/lock.js';
import { validateKey } from '../validation.js';

/** One side of a primitive: every call goes through the engine's acquisition with `kind` attached. */
export class KindSide implements Acquirable {
  constructor(
    private readonly engine: Engine,
    readonly key: string,
    private readonly kind: LockKind,
  ) {}

  acquire(options?: AcquireOptions): Promise<Lock> {
    // A waiting acquire never resolves null (it throws LockTimeoutError): no promise layer to check it.
    return this.engine.acquireKind(this.key, this.kind, options, true) as Promise<Lock>;
  }

  tryAcquire(options?: Omit<AcquireOptions, 'waitMs'>): Promise<Lock | null> {
    return this.engine.acquireKind(this.key, this.kind, options, false);
  }

  withLock<T>(fn: (lock: Lock) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return this.engine.withKind(this.key, this.kind, fn, options);
  }
}

/** `engine.readWriteLock(key)`: no I/O; the backend's capability is checked at the first acquire. */
export function createReadWriteLock(engine: Engine, key: string, backend: string): ReadWriteLock {
  validateKey(key, backend);
  return Object.freeze({ key, read: new KindSide(engine, key, { type: 'read' }), write: new KindSide(engine, key, { type: 'write' }) });
}
