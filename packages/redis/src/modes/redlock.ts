import type { AcquireRequest, AttemptResult, Capabilities, Grant } from '@deadbolt/core/adapter';
import type { Redis } from 'ioredis';
import { withDeadline } from '@deadbolt/core/adapter';
import { pipelined } from '../pipeline.js';
import { pair, queueScript, runScript } from '../lua.js';
import { randomToken } from '../token.js';
import { baseCapabilities, type LockMode } from './mode.js';

export const redlockCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  // No fencing: each master would need its own counter, and independent counters give no single
  // order across holders (a minority could lag), so a token could not be trusted to only grow.
  fencing: false,
  reentrant: 'client',
  // Waiting on N masters' channels is not worth it: core polls with backoff and jitter.
  notifications: false,
  clock: 'server',
  // Below this, validity (ttl - elapsed - drift) is too short to be worth granting.
  minTtlMs: 100,
});

/** A grant whose validity moves forward with each renewal that reaches a majority. */
interface RedlockGrant extends Grant {
  validUntil: number;
}

/** The majority is not reachable: the outcome is unknown, not "someone else holds it". */
export class QuorumUnreachableError extends Error {
  constructor(
    readonly answered: number,
    readonly quorum: number,
    readonly causes: readonly unknown[],
  ) {
    super(
      `only ${answered} master(s) answered, ${quorum} needed: ${causes.map((cause) => (cause instanceof Error ? cause.message : String(cause))).join('; ')}`,
    );
    this.name = 'QuorumUnreachableError';
  }
}

type NodeAnswer = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

export interface RedlockSettings {
  readonly driftFactor: number;
  readonly commandTimeoutMs: number;
  readonly nodeTimeoutMs: number | undefined;
}

/**
 * RedLock (seed 004; the Redis docs' "Redlock" section; node-redlock's structure): the same key and
 * random token on N independent masters, each asked with a short per-node deadline, all in parallel.
 * The lock is held only if a majority (N/2+1) accepted and time is left: validity = ttl - elapsed -
 * drift, drift = ttl * driftFactor + 2 ms. Otherwise it is released on every master, including those
 * that did not answer (a late SET may still land). Renewal needs a majority as well.
 */
export class RedlockMode implements LockMode {
  readonly mode = 'redlock' as const;
  readonly capabilities = redlockCapabilities;
  readonly publishesReleases = false;
  readonly quorum: number;

  constructor(
    private readonly masters: readonly Redis[],
    private readonly settings: RedlockSettings,
  ) {
    this.quorum = Math.floor(masters.length / 2) + 1;
  }

  /** A node's deadline: well below the ttl (seed 004: 5-50 ms for a 10 s lock), within the command deadline. */
  nodeTimeoutMs(ttlMs: number): number {
    return this.settings.nodeTimeoutMs ?? Math.min(this.settings.commandTimeoutMs, Math.max(50, Math.floor(ttlMs / 5)));
  }

  private driftMs(ttlMs: number): number {
    return Math.floor(ttlMs * this.settings.driftFactor) + 2;
  }

  private onEveryMaster(deadlineMs: number, call: (master: Redis) => Promise<unknown>): Promise<NodeAnswer[]> {
    return Promise.all(
      this.masters.map((master) =>
        withDeadline(call(master), deadlineMs).then(
          (value): NodeAnswer => ({ ok: true, value }),
          (error: unknown): NodeAnswer => ({ ok: false, error }),
        ),
      ),
    );
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const token = randomToken();
    const startedAt = Date.now();
    const answers = await this.onEveryMaster(this.nodeTimeoutMs(request.ttlMs), (master) =>
      runScript(master, 'set-nx-px', [request.key], [token, request.ttlMs]),
    );
    const validUntil = startedAt + request.ttlMs - this.driftMs(request.ttlMs);
    let won = 0;
    let answered = 0;
    const heldFor: number[] = [];
    for (const answer of answers) {
      if (!answer.ok) continue;
      answered += 1;
      const [acquired, pttl] = pair(answer.value);
      if (acquired === 1) won += 1;
      else heldFor.push(Math.max(0, pttl));
    }
    if (won >= this.quorum && Date.now() < validUntil) {
      const grant: RedlockGrant = { key: request.key, owner: request.owner, token, validUntil };
      return { acquired: true, grant };
    }
    // Undo everywhere, even where the SET seemed to fail: it may have landed after our deadline.
    await this.onEveryMaster(this.nodeTimeoutMs(request.ttlMs), (master) =>
      runScript(master, 'compare-delete', [request.key], [token, '']),
    );
    if (answered < this.quorum) throw new QuorumUnreachableError(answered, this.quorum, failures(answers));
    // The holder's lease ends on a majority when the quorum-th shortest pttl runs out.
    heldFor.sort((a, b) => a - b);
    const retryAfterMs = heldFor[Math.min(heldFor.length - 1, Math.max(0, this.quorum - won - 1))];
    return retryAfterMs === undefined ? { acquired: false } : { acquired: false, retryAfterMs };
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const startedAt = Date.now();
    const answers = await this.onEveryMaster(this.nodeTimeoutMs(ttlMs), (master) =>
      runScript(master, 'compare-pexpire', [grant.key], [grant.token, ttlMs]),
    );
    return this.judgeRenewal(grant, ttlMs, startedAt, answers);
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const startedAt = Date.now();
    const longest = Math.max(...ttlMs);
    // One pipeline per master: every grant's compare-and-pexpire in one round trip to each.
    const perMaster = await this.onEveryMaster(this.nodeTimeoutMs(longest), (master) =>
      pipelined(
        master,
        grants.map((grant) => grant.key),
        (pipeline, index) => queueScript(pipeline, 'compare-pexpire', [grants[index]!.key], [grants[index]!.token, ttlMs[index]!]),
      ),
    );
    return grants.map((grant, index) => {
      const answers = perMaster.map((answer): NodeAnswer => (answer.ok ? { ok: true, value: (answer.value as unknown[])[index] } : answer));
      return this.judgeRenewal(grant, ttlMs[index]!, startedAt, answers);
    });
  }

  private judgeRenewal(grant: Grant, ttlMs: number, startedAt: number, answers: readonly NodeAnswer[]): boolean {
    const extended = answers.filter((answer) => answer.ok && Number(answer.value) === 1).length;
    const answered = answers.filter((answer) => answer.ok).length;
    const validUntil = startedAt + ttlMs - this.driftMs(ttlMs);
    if (extended >= this.quorum && Date.now() < validUntil) {
      // Core reads validUntil after a confirmed renewal: the new validity caps the local lease.
      (grant as RedlockGrant).validUntil = validUntil;
      return true;
    }
    if (answered < this.quorum) throw new QuorumUnreachableError(answered, this.quorum, failures(answers));
    return false;
  }

  async release(grant: Grant): Promise<boolean> {
    const answers = await this.onEveryMaster(this.settings.commandTimeoutMs, (master) =>
      runScript(master, 'compare-delete', [grant.key], [grant.token, '']),
    );
    const deleted = answers.filter((answer) => answer.ok && Number(answer.value) === 1).length;
    const answered = answers.filter((answer) => answer.ok).length;
    if (deleted >= this.quorum) return true;
    if (answered < this.quorum) throw new QuorumUnreachableError(answered, this.quorum, failures(answers));
    return false;
  }

  /** The token on a majority of the masters, each asked with the node deadline. Unknown (too few answers): thrown. */
  async validate(grant: Grant): Promise<boolean> {
    const answers = await this.onEveryMaster(this.nodeTimeoutMs(Number.MAX_SAFE_INTEGER), (master) => master.get(grant.key));
    const answered = answers.filter((answer) => answer.ok).length;
    const holding = answers.filter((answer) => answer.ok && answer.value === grant.token).length;
    if (holding >= this.quorum) return true;
    // The silent masters could make up the majority: the answer is unknown, not no.
    if (holding + this.masters.length - answered >= this.quorum) throw new QuorumUnreachableError(answered, this.quorum, failures(answers));
    return false;
  }

  async close(): Promise<void> {}
}

function failures(answers: readonly NodeAnswer[]): unknown[] {
  return answers.flatMap((answer) => (answer.ok ? [] : [answer.error]));
}
