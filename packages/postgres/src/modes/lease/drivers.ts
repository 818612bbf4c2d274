import type { AcquireRequest, AttemptResult, CampaignRequest, ElectionDriver, Grant, HoldDriver, TermGrant } from '@deadbolt/core/adapter';
import type { LeaseElection } from './election.js';
import type { LeaseOperations } from './operations.js';

/** The lease mode's rows as the drivers below use them (LeaseMode, the mutex's driver). */
export interface LeaseRows extends Required<Pick<HoldDriver, 'acquire' | 'renewMany' | 'validate' | 'validateMany'>> {
  tryAcquire(request: AcquireRequest): Promise<AttemptResult>;
  renew(grant: Grant, ttlMs: number): Promise<boolean>;
  release(grant: Grant): Promise<boolean>;
  /** Releases a read, write or permit hold (its rows are in the holders table). */
  releaseKind(grant: Grant): Promise<boolean>;
}

/**
 * Read, write and permit holds: taken by the same acquire call and queue as a lock (the request's
 * kind picks the kinds function, kinds-sql.ts), renewed and validated by the statements that cover
 * both tables, released by the kinds release.
 */
export class LeaseKinds implements HoldDriver {
  constructor(private readonly rows: LeaseRows) {}

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.rows.tryAcquire(request);
  }

  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.rows.acquire(request, deadline, signal);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return (await this.rows.renewMany([grant], [ttlMs]))[0] === true;
  }

  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    return this.rows.renewMany(grants, ttlMs);
  }

  validate(grant: Grant): Promise<boolean> {
    return this.rows.validate(grant);
  }

  validateMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    return this.rows.validateMany(grants);
  }

  release(grant: Grant): Promise<boolean> {
    return this.rows.releaseKind(grant);
  }
}

/** Elections: a term is a lease row of the lock table, so it is renewed, validated and released as a lock. */
export class LeaseTerms implements ElectionDriver {
  constructor(
    private readonly rows: LeaseRows,
    private readonly elections: LeaseElection,
    private readonly operations: LeaseOperations,
  ) {}

  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    return this.elections.campaign(request, deadline, signal);
  }

  leader(key: string): Promise<string | undefined> {
    return this.elections.leader(key);
  }

  leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    return this.operations.leaderInfo(key);
  }

  renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return this.rows.renew(grant, ttlMs);
  }

  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    return this.rows.renewMany(grants, ttlMs);
  }

  release(grant: Grant): Promise<boolean> {
    return this.rows.release(grant);
  }

  validate(grant: Grant): Promise<boolean> {
    return this.rows.validate(grant);
  }
}
