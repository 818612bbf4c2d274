import type { LockKind } from './backend.js';
import type { Acquirable, KindAcquirer, ReadWriteLock } from './kinds.js';
import type { AcquireOptions, Lock } from './types.js';
import { validateKey } from './validation.js';

/** One side of a primitive: every call goes through the client's acquisition with `kind` attached. */
export class KindSide implements Acquirable {
  constructor(
    private readonly client: KindAcquirer,
    readonly key: string,
    private readonly kind: LockKind,
  ) {}

  acquire(options?: AcquireOptions): Promise<Lock> {
    // A waiting acquire never resolves null (it throws LockTimeoutError): no promise layer to check it.
    return this.client.acquireKind(this.key, this.kind, options, true) as Promise<Lock>;
  }

  tryAcquire(options?: Omit<AcquireOptions, 'waitMs'>): Promise<Lock | null> {
    return this.client.acquireKind(this.key, this.kind, options, false);
  }

  withLock<T>(fn: (lock: Lock) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return this.client.withKind(this.key, this.kind, fn, options);
  }
}

/** `client.readWriteLock(key)`: no I/O; the backend's capability is checked at the first acquire. */
export function createReadWriteLock(client: KindAcquirer, key: string, backend: string): ReadWriteLock {
  validateKey(key, backend);
  return Object.freeze({ key, read: new KindSide(client, key, { type: 'read' }), write: new KindSide(client, key, { type: 'write' }) });
}
