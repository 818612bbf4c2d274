import { randomUUID } from 'node:crypto';
import type { Grant, LockBackend } from './backend.js';
import { backoffDelayMs } from './backoff.js';
import { candidacyBackoff, isTransient } from './candidacy-retry.js';
import type { ElectionDriver } from './contract/drivers.js';
import { driversOf } from './contract/legacy.js';
import type { CampaignRequest, TermGrant } from './election-backend.js';
import { DeadboltError, InvalidArgumentError, UnsupportedOperationError } from './errors.js';
import type { PrimitiveHost } from './primitive-host.js';
import { observeLeader, leaderReader, validateObserveOptions } from './observe-leader.js';
import type { LeaderChange, ObserveOptions } from './operations-types.js';
import { termOf } from './term.js';
import type { Lock } from './types.js';
import type { ElectOptions, Election, Term } from './types-multi.js';
import { sleep } from './sleep.js';
import { describeValue, maxDurationMs } from './validation.js';

const electOptionNames: ReadonlySet<string> = new Set(['id', 'ttlMs', 'signal', 'layout']);
/** A candidacy waits in slices: each slice is one backend campaign with a finite deadline. */
const campaignSliceMs = 60_000;

/**
 * `client.elect(name, { id })`. A term is a lock on the election's key held by a backend campaign
 * (ZooKeeper: a LeaderLatch node; Redis, PostgreSQL, memory: the fenced lock), so it is renewed,
 * released and declared lost by the same machinery as a lock: `term.signal` aborts and 'lost' is
 * emitted at the local lease deadline, which falls before the server's (DESIGN: drift allowance).
 * The term number is the grant's fence: strictly increasing across leaders (Kleppmann's fencing
 * token), so a resource that checks it rejects a stale leader.
 */
export class DeadboltElection implements Election {
  readonly id: string;
  private readonly owner: string;
  private readonly resigning = new AbortController();
  private current: { readonly lock: Lock; readonly ended: AbortController } | undefined;
  private lastTerm = Number.NEGATIVE_INFINITY;
  private iterating = false;

  constructor(
    private readonly host: PrimitiveHost,
    readonly name: string,
    private readonly options: ElectOptions,
  ) {
    validateElectOptions(name, options, host.label());
    this.id = options.id;
    // One owner per candidacy: two elections in one client are two participants.
    this.owner = `${host.clientId}:election:${randomUUID()}`;
  }

  [Symbol.asyncIterator](): AsyncIterator<Term> {
    if (this.iterating)
      throw new InvalidArgumentError('election', 'it is already being iterated; call elect() again for a second participant', {
        key: this.name,
        backend: this.host.label(),
      });
    this.iterating = true;
    return {
      next: () => this.next(),
      return: async () => {
        await this.resign();
        return { done: true, value: undefined };
      },
    };
  }

  async leader(): Promise<string | null> {
    const { backend, election } = await this.electionBackend();
    const plan = this.host.plan(backend, this.name, { owner: this.owner, lockDelayMs: 0 }, true);
    const id = await this.host.call(backend, 'leader', this.name, () => election.leader(plan.fullKey, this.options.layout));
    return id ?? null;
  }

  observe(options?: ObserveOptions): AsyncIterable<LeaderChange> {
    validateObserveOptions(options, this.name, this.host.label());
    const read = async () => {
      const { backend, election } = await this.electionBackend();
      const plan = this.host.plan(backend, this.name, { owner: this.owner, lockDelayMs: 0 }, true);
      const reader = leaderReader(election, plan.fullKey, this.options.layout);
      return this.host.call(backend, 'leader', this.name, reader);
    };
    return observeLeader(read, options, this.host.closing);
  }

  async resign(): Promise<void> {
    this.resigning.abort(new DeadboltError('resigned', { key: this.name, backend: this.host.label() }));
    await this.endTerm();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.resign();
  }

  private async next(): Promise<IteratorResult<Term>> {
    // The loop body finished: its term ends here (Curator LeaderSelector: takeLeadership returned).
    await this.endTerm();
    if (this.resigning.signal.aborted) return { done: true, value: undefined };
    this.host.assertOpen(this.name);
    const { backend, election } = await this.electionBackend();
    const plan = this.host.plan(
      backend,
      this.name,
      { ...(this.options.ttlMs === undefined ? {} : { ttlMs: this.options.ttlMs }), autoRenew: true, owner: this.owner, lockDelayMs: 0 },
      true,
    );
    const stop = AbortSignal.any([this.resigning.signal, this.host.closing, ...(this.options.signal ? [this.options.signal] : [])]);
    let reported = false;
    const request: CampaignRequest = {
      key: plan.fullKey,
      owner: plan.owner,
      ttlMs: plan.ttlMs,
      candidate: this.id,
      ...(this.options.layout ? { layout: this.options.layout } : {}),
      onLost: (grant, cause) => this.host.onLost(grant, cause),
      onContended: () => {
        if (reported) return;
        reported = true;
        this.host.emit('contended', { key: this.name, owner: this.owner, attempt: 1 });
      },
    };
    const startedAt = Date.now();
    let failures = 0;
    for (;;) {
      if (this.resigning.signal.aborted) return { done: true, value: undefined };
      stop.throwIfAborted();
      const sentAt = Date.now();
      const deadline = Date.now() + campaignSliceMs;
      let grant: Grant | undefined;
      try {
        grant = await this.host.call(backend, 'elect', this.name, () => election.campaign(request, deadline, stop), {
          waitUntil: deadline,
          undoBy: election,
        });
      } catch (error) {
        // Resigned, closed or the caller's signal: the loop's top ends the candidacy with its reason.
        if (stop.aborted) continue;
        // An outage ends no candidacy: only resign(), the caller's signal and close() do.
        if (!isTransient(error)) throw error;
        failures += 1;
        this.report(error);
        await sleep(backoffDelayMs(failures, candidacyBackoff), stop).catch(() => undefined);
        continue;
      }
      failures = 0;
      if (!grant) continue;
      if (stop.aborted) {
        await this.host.call(backend, 'release', this.name, () => election.release(grant), { release: true }).catch(() => false);
        continue;
      }
      const term = this.checkedTerm(grant);
      // The term is the election driver's to renew, validate and release: never the mutex's.
      const lock = this.host.adopt(backend, plan, grant, (grant as TermGrant).sentAt ?? sentAt, startedAt, election);
      // The term's signal also aborts when we give the term up (resign, the body finished), so work
      // still running on it stops before the next leader's term can start.
      const ended = new AbortController();
      this.current = { lock, ended };
      return { done: false, value: termOf(term, this.id, lock, ended.signal, this.host.label(), this.name) };
    }
  }

  private checkedTerm(grant: Grant): number {
    const term = grant.fence;
    if (typeof term !== 'number' || !(term > this.lastTerm)) {
      throw new DeadboltError(`the backend granted term ${String(term)} after term ${this.lastTerm}: terms must strictly increase`, {
        key: this.name,
        backend: this.host.label(),
      });
    }
    this.lastTerm = term;
    return term;
  }

  private async endTerm(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    if (!current) return;
    current.ended.abort(new DeadboltError('the term was given up', { key: this.name, backend: this.host.label() }));
    // A release the server did not answer leaves the term to run out on the server: it is given up
    // here (signal aborted, no more renewals), and the candidacy goes on.
    await current.lock.release().catch((error: unknown) => {
      if (!isTransient(error)) throw error;
      this.report(error);
    });
  }

  /** A transient failure, on the client's 'error' event: the candidacy itself goes on. */
  private report(error: unknown): void {
    this.host.emit('error', { key: this.name, error: error as Error });
  }

  private async electionBackend(): Promise<{ readonly backend: LockBackend; readonly election: ElectionDriver }> {
    const backend = await this.host.backend();
    const election = driversOf(backend).election;
    if (backend.capabilities.election === true && election !== undefined) return { backend, election };
    throw new UnsupportedOperationError(
      'leader election',
      `backend ${backend.name} cannot give a leader a strictly increasing term that the server enforces (capabilities.election is false); elections run on memory, zookeeper, redis (mode=setnx or fair) and postgres (mode=lease or advisory)`,
      { key: this.name, backend: backend.name },
    );
  }
}

function validateElectOptions(name: unknown, options: unknown, backend: string): asserts options is ElectOptions {
  const context = { key: typeof name === 'string' ? name : undefined, backend };
  if (typeof name !== 'string' || name.length === 0)
    throw new InvalidArgumentError('name', `expected a non-empty election name, got ${describeValue(name)}`, context);
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('options', `expected { id }, got ${describeValue(options)}`, context);
  const record = options as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!electOptionNames.has(key))
      throw new InvalidArgumentError(`option "${key}"`, `unknown option; the options are ${[...electOptionNames].join(', ')}`, context);
  }
  if (typeof record.id !== 'string' || record.id.length === 0)
    throw new InvalidArgumentError('id', `expected a non-empty participant id, got ${describeValue(record.id)}`, context);
  const ttl = record.ttlMs;
  if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > maxDurationMs)) {
    throw new InvalidArgumentError(
      'ttlMs',
      `expected a positive integer of milliseconds up to ${maxDurationMs}, got ${describeValue(ttl)}`,
      context,
    );
  }
  if (record.signal !== undefined && !(record.signal instanceof AbortSignal))
    throw new InvalidArgumentError('signal', `expected an AbortSignal, got ${describeValue(record.signal)}`, context);
  if (record.layout !== undefined && record.layout !== 'latch' && record.layout !== 'selector') {
    throw new InvalidArgumentError('layout', `expected 'latch' or 'selector', got ${describeValue(record.layout)}`, context);
  }
}
