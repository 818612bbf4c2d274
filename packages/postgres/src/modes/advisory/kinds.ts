import type { AcquireRequest, AttemptResult, Grant, HoldDriver } from '@deadbolt/core/adapter';
import { AdvisorySemaphore } from './semaphore.js';
import { falseIfEnded } from './validate.js';

/**
 * The advisory kinds driver: read and write holds (read-write.ts) and permits (semaphore.ts), each
 * on a session of its own. Every request carries its kind; every grant it issues it also keeps.
 */
export class AdvisoryKinds extends AdvisorySemaphore implements HoldDriver {
  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.attempt(request, false, Date.now(), undefined).then((grant) => (grant ? { acquired: true, grant } : { acquired: false }));
  }

  /** A plain attempt first; when refused, a wait in the server's queue (a gate's, for permits). */
  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    if (signal.aborted) return undefined;
    const grant = await this.attempt(request, false, Date.now(), undefined);
    if (grant !== undefined) return grant;
    request.onContended?.();
    if (signal.aborted || Date.now() >= deadline) return undefined;
    return this.attempt(request, true, deadline, signal);
  }

  /** Its session still lives (renew); a session the server ended answers false. */
  validate(grant: Grant): Promise<boolean> {
    return this.renew(grant).catch(falseIfEnded);
  }

  private attempt(request: AcquireRequest, wait: boolean, deadline: number, signal: AbortSignal | undefined): Promise<Grant | undefined> {
    const kind = request.kind;
    if (kind?.type === 'permit') return this.acquirePermit(request, kind.permits, wait, deadline, signal);
    const mode = kind?.type === 'read' ? 'read' : 'write';
    return this.take(request, mode, kind?.type === 'read' ? kind.downgradeOf : undefined, wait, deadline, signal);
  }
}
