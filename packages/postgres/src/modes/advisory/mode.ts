import type { AcquireRequest, AttemptResult, Capabilities, Grant } from '@deadbolt/core/adapter';
import { baseCapabilities, type ModeContext, type PostgresLockMode } from '../mode.js';
import { AdvisoryElection } from './election.js';
import { AdvisoryKinds } from './kinds.js';
import { AdvisoryMulti } from './multi.js';
import { AdvisoryMutex } from './mutex.js';
import { AdvisoryOperations } from './operations.js';
import { AdvisoryServer } from './server.js';

export const advisoryCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  lease: 'session',
  // pg_advisory_lock waiters are granted in arrival order by the server's lock manager.
  fair: true,
  // pg_advisory_lock_shared / pg_advisory_lock on dedicated sessions (read-write.ts), and slot
  // locks behind a FIFO gate (semaphore.ts).
  readWrite: true,
  semaphore: true,
  // acquireAll: the sorted advisory ids in one statement on one session (multi.ts).
  multi: 'atomic',
  // A term is the key's advisory lock on a session of its own, the fence as term (election.ts).
  election: true,
  // inspect from pg_locks (operations.ts); no forceRelease (it would end a whole session) and no list (pg_locks keeps no names).
  operations: Object.freeze(['inspect'] as const),
});

/**
 * 'postgres:advisory': session-level advisory locks. The lock lives and dies with its session: a
 * dropped connection or pg_terminate_backend reports every lock of that session lost. One shared
 * piece (server.ts: the fence objects, the mutex's sessions, the closed state) under four drivers,
 * each the keeper of the holds it issues: the mutex (mutex.ts, also keeping a multi-key set's
 * grants), the kinds (read-write and semaphore), multi and election; and inspect (operations.ts). Needs session state, so it
 * does NOT work through a transaction-pooling PgBouncer (use 'lease').
 */
export class AdvisoryMode implements PostgresLockMode {
  readonly kinds: AdvisoryKinds;
  readonly multi: AdvisoryMulti;
  readonly election: AdvisoryElection;
  readonly operations: AdvisoryOperations;
  private readonly server: AdvisoryServer;
  private readonly mutex: AdvisoryMutex;
  private closing: Promise<void> | undefined;

  constructor(context: ModeContext) {
    this.server = new AdvisoryServer(context);
    this.mutex = new AdvisoryMutex(this.server);
    this.kinds = new AdvisoryKinds(this.server);
    this.multi = new AdvisoryMulti(this.server, this.mutex);
    this.election = new AdvisoryElection(this.server);
    this.operations = new AdvisoryOperations(this.server);
  }

  // The mode is the mutex's driver (the backend's own methods): mutex.ts.

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.mutex.tryAcquire(request);
  }

  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.mutex.acquire(request, deadline, signal);
  }

  renew(grant: Grant): Promise<boolean> {
    return this.mutex.renew(grant);
  }

  renewMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    return this.mutex.renewMany(grants);
  }

  validate(grant: Grant): Promise<boolean> {
    return this.mutex.validate(grant);
  }

  release(grant: Grant): Promise<boolean> {
    return this.mutex.release(grant);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.mutex.clear();
      await Promise.all([this.server.close(), this.kinds.close(), this.election.close()]);
    })();
    return this.closing;
  }
}
