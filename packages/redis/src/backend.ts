import {
  BackendUnavailableError,
  DeadlineWheel,
  endpointOf,
  guardCall,
  inspectSafely,
  type AcquireRequest,
  type AttemptResult,
  type CampaignRequest,
  type Capabilities,
  type Grant,
  type LockBackend,
  type MultiAttemptResult,
  type OperationsBackend,
  type TermGrant,
} from '@deadbolt/core/adapter';
import { Cluster, type Redis } from 'ioredis';
import { closeConnection, lastConnectionError, openCommandConnection, openMasters } from './connections.js';
import { withDeadline } from './deadline.js';
import { campaignSetnx, leaderSetnx } from './election.js';
import { releaseChannel, waitingKey, waitingMarkMs } from './keys.js';
import { FairMode, type FairSettings } from './modes/fair.js';
import { FairKinds } from './modes/fair-kinds.js';
import { GetsetMode } from './modes/getset.js';
import { HashReentrantMode } from './modes/hash-reentrant.js';
import type { LockMode } from './modes/mode.js';
import { RedlockMode } from './modes/redlock.js';
import { SetnxMode } from './modes/setnx.js';
import { bySlotThenKey, tryAcquireManySetnx } from './multi.js';
import { ReleaseNotifier } from './notifier.js';
import { operatorMethods, RedisOperations } from './operations.js';
import type { ResolvedRedisOptions } from './options.js';
import { runRecordsOn } from './run-records.js';
import { runScript } from './scripts.js';
import { TokenSource } from './token.js';
import { validateGrant } from './validate.js';

/** A connection in subscriber mode can run nothing else: it is a second socket, ours to close. */
function subscriberOf(connection: Redis | Cluster, clusterOptions: Record<string, unknown> = {}): Redis | Cluster {
  const subscriber = connection instanceof Cluster ? connection.duplicate(undefined, clusterOptions) : connection.duplicate();
  subscriber.on('error', () => undefined);
  return subscriber;
}

/** Extra time the safety-net deadline allows over ioredis' own command timeout, which should fire first. */
const deadlineSlackMs = 100;
/** How long close() waits for QUIT before dropping a socket. */
const quitTimeoutMs = 500;

/**
 * The Redis LockBackend: picks a mode, owns the connections, turns every failure into a typed
 * BackendUnavailableError naming the key and `name` (never the URL), bounds every call with a
 * deadline, and offers `waitForChange` for the modes whose release publishes.
 */
export class RedisBackend implements LockBackend {
  readonly name: string;
  readonly capabilities: Capabilities;
  readonly defaultPrefix = 'deadbolt:';
  /** The configured nodes (or Sentinels), for error messages; the app's own client has none we know. */
  readonly endpoint: string | undefined;
  /** Present only for modes that publish releases (setnx, hash-reentrant); core polls for the others. */
  readonly waitForChange?: (key: string, maxWaitMs: number, signal: AbortSignal) => Promise<void>;
  /** Present only for the fair mode: the server queues the waiter and grants it in place. */
  readonly acquire?: (request: AcquireRequest, deadline: number, signal: AbortSignal) => Promise<Grant | undefined>;
  readonly acquireQueuesAtOnce?: boolean;
  /** setnx: every key of one hash slot in one script, all or nothing (multi.ts). */
  readonly tryAcquireMany?: (requests: readonly AcquireRequest[]) => Promise<MultiAttemptResult>;
  /** fair: one script per hash slot queues on every key at once (modes/fair-kinds.ts). */
  readonly acquireMany?: (
    requests: readonly AcquireRequest[],
    deadline: number,
    signal: AbortSignal,
  ) => Promise<readonly Grant[] | undefined>;
  /** setnx: elections on the lock, the fence as term, the leader's id beside it (election.ts). */
  readonly campaign?: (request: CampaignRequest, deadline: number, signal: AbortSignal) => Promise<TermGrant | undefined>;
  readonly leader?: (key: string) => Promise<string | undefined>;
  /** The operator methods (operations.ts), assigned in the constructor. */
  declare readonly inspect: OperationsBackend['inspect'];
  declare readonly forceRelease: OperationsBackend['forceRelease'];
  declare readonly listKeys: OperationsBackend['listKeys'];
  declare readonly forcedBy: OperationsBackend['forcedBy'];
  declare readonly leaderInfo?: (key: string) => Promise<{ id: string; term: number } | undefined>;

  private readonly mode: LockMode;
  /** fair: read-write locks and semaphores (requests with a kind, and their grants) go here. */
  private readonly fairKinds: FairKinds | undefined;
  private readonly owned: (Redis | Cluster)[] = [];
  /** Every command connection, owned or the user's: only simulateCrash() drops the user's. */
  private readonly commandConnections: (Redis | Cluster)[] = [];
  private readonly notifier: ReleaseNotifier | undefined;
  private readonly deadlineMs: number;
  /** Every call settles within callTimeoutMs (see run): core adds no timer of its own per call. */
  readonly boundsCalls = true;
  /** The bound of each call (issue 14). */
  readonly callTimeoutMs: number;
  /**
   * Single-server and Cluster modes send one command per call, which ioredis' commandTimeout already
   * bounds: no second deadline on the hot path. RedLock fans out to several masters and keeps its
   * own deadline, and so does a user's connection without a commandTimeout.
   */
  private readonly ownDeadline: boolean;
  /** Those deadlines, on one timer (the adapter kit's wheel): a timer per call showed in profiles. */
  private readonly deadlines = new DeadlineWheel();
  private closing: Promise<void> | undefined;
  /** Aborted by close(): calls still waiting on a frozen server give up at once, and no timer stays. */
  private readonly closed = new AbortController();
  /**
   * The calls that `closed` would cut short (ownDeadline: the app's connection without a
   * commandTimeout), while in flight: close() lets them finish first, as QUIT does on our own
   * connections. Cut short at once, a release the app began just before closing its client failed
   * with "the backend is closed" although the server was answering it (issue 16).
   */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Attempt tokens (what an undo compares), unique per backend and attempt. */
  private readonly tokens = new TokenSource();

  constructor(private readonly options: ResolvedRedisOptions) {
    this.name = `redis:${options.mode}`;
    this.endpoint = options.client !== undefined || options.clients !== undefined ? undefined : endpointOf(options.nodes);
    if (options.mode === 'redlock') {
      const masters = openMasters(options);
      for (const master of masters) if (master.owned) this.owned.push(master.connection);
      this.commandConnections.push(...masters.map((master) => master.connection));
      this.mode = new RedlockMode(
        masters.map((master) => master.connection),
        options,
      );
      // Acquire = one parallel round + possibly one undo round, each bounded per node.
      this.deadlineMs = 2 * options.commandTimeoutMs + deadlineSlackMs;
      this.notifier = undefined;
    } else {
      const { connection, owned } = openCommandConnection(options);
      if (owned) this.owned.push(connection);
      this.commandConnections.push(connection);
      this.mode = this.singleMode(connection);
      this.deadlineMs = options.commandTimeoutMs + deadlineSlackMs;
      if (this.mode.publishesReleases) {
        const notifier = new ReleaseNotifier(() => subscriberOf(connection));
        this.notifier = notifier;
        this.waitForChange = (key, maxWaitMs, signal) =>
          notifier.wait(releaseChannel(key), maxWaitMs, signal, () => this.stillHeld(connection, key));
      } else {
        this.notifier = undefined;
      }
      if (this.mode instanceof SetnxMode && this.waitForChange) {
        const waitForChange = this.waitForChange;
        const acked = options.replicaWait;
        // With replicas, acquireAll takes key after key (each grant acknowledged) instead of one script.
        if (acked === undefined)
          this.tryAcquireMany = (requests) =>
            this.run('acquire', requests.map((request) => request.key).join(', '), () => tryAcquireManySetnx(connection, requests));
        this.campaign = (request, deadline, signal) =>
          this.run('elect', request.key, () => campaignSetnx(connection, waitForChange, request, deadline, signal, acked), false);
        this.leader = (key) => this.run('leader', key, () => leaderSetnx(connection, key));
      }
      if (this.mode instanceof FairMode) {
        const fair = this.mode;
        const kinds = new FairKinds(connection, this.fairSettings(connection), this.name);
        this.fairKinds = kinds;
        this.acquireMany = (requests, deadline, signal) =>
          this.run(
            'acquire',
            requests.map((request) => request.key).join(', '),
            () => kinds.acquireMany(requests, deadline, signal),
            false,
          );
        this.campaign = (request, deadline, signal) =>
          this.run('elect', request.key, () => kinds.campaign(request, deadline, signal), false);
        this.leader = (key) => this.run('leader', key, () => kinds.leader(key));
        this.acquireQueuesAtOnce = true;
        this.acquire = (request, deadline, signal) =>
          this.run(
            'acquire',
            request.key,
            () => (request.kind === undefined ? fair.acquire(request, deadline, signal) : kinds.acquire(request, deadline, signal)),
            false,
          );
      }
    }
    this.capabilities = this.mode.capabilities;
    Object.assign(this, runRecordsOn(this.commandConnections[0]!, this.run.bind(this)));
    this.callTimeoutMs = this.deadlineMs;
    this.ownDeadline = options.mode === 'redlock' || !this.commandConnections.every(hasCommandTimeout);
    const ops = new RedisOperations(this.commandConnections, options.mode === 'getset' ? (options.now ?? Date.now) : undefined);
    Object.assign(
      this,
      operatorMethods(ops, (action, key, fn) => this.run(action, key, fn), this.leader !== undefined),
    );
  }

  private singleMode(connection: Redis | Cluster): LockMode {
    switch (this.options.mode) {
      case 'setnx':
        return new SetnxMode(connection, this.options.replicaWait);
      case 'hash-reentrant':
        return new HashReentrantMode(connection, this.options.replicaWait);
      case 'getset':
        return new GetsetMode(connection, this.options.now);
      case 'fair':
        return new FairMode(connection, this.fairSettings(connection));
      default:
        throw new Error(`unreachable mode ${this.options.mode}`);
    }
  }

  private fairSettings(connection: Redis | Cluster): FairSettings {
    return {
      waiterLeaseMs: this.options.waiterLeaseMs,
      cluster: connection instanceof Cluster,
      // On Cluster, shard channels need ioredis' sharded subscribers (one per master).
      openSubscriber: () => subscriberOf(connection, { shardedSubscribers: true }),
    };
  }

  /** The mode that serves a request: the fair mode's kinds (read, write, permit) have their own scripts. */
  private modeFor(request: AcquireRequest): LockMode {
    return request.kind !== undefined && this.fairKinds !== undefined ? this.fairKinds : this.mode;
  }

  private modeOf(grant: Grant): LockMode {
    return this.fairKinds?.owns(grant) === true ? this.fairKinds : this.mode;
  }

  /** The one global order of a multi-lock's keys: by Cluster slot, then key (multi.ts). */
  orderKeys(keys: readonly string[]): readonly string[] {
    return bySlotThenKey(keys);
  }

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const mode = this.modeFor(request);
    const token = mode.tokenFor?.(request) ?? this.tokens.next();
    return this.run(
      'acquire',
      request.key,
      () => mode.tryAcquire(request, token),
      true,
      (late) => {
        // Given up on (a frozen server answers after ioredis' command timeout, or never): the script
        // may still run when the server wakes. Undo this attempt's token; on the same connection the
        // undo runs after the attempt, so no lease is left for the whole ttl (issue 14).
        if (late === undefined) return mode.undoAcquire?.(request, token);
        if (late.acquired) return mode.release(late.grant);
      },
      request.ttlMs,
    );
  }

  renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return this.run('renew', grant.key, () => this.modeOf(grant).renew(grant, ttlMs));
  }

  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    if (grants.length === 0) return Promise.resolve([]);
    return this.run('renew', grants.length === 1 ? grants[0]!.key : undefined, () => this.renewEach(grants, ttlMs));
  }

  /** Mutex grants and kind grants renew through their own scripts, in one round trip each, side by side. */
  private async renewEach(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const kinds = this.fairKinds;
    if (kinds === undefined || !grants.some((grant) => kinds.owns(grant))) return this.mode.renewMany(grants, ttlMs);
    const [ours, theirs] = [[] as number[], [] as number[]];
    for (const [index, grant] of grants.entries()) (kinds.owns(grant) ? ours : theirs).push(index);
    const pick = <T>(items: readonly T[], indices: number[]): T[] => indices.map((index) => items[index]!);
    const [kindReplies, mutexReplies] = await Promise.all([
      kinds.renewMany(pick(grants, ours), pick(ttlMs, ours)),
      theirs.length > 0 ? this.mode.renewMany(pick(grants, theirs), pick(ttlMs, theirs)) : Promise.resolve([]),
    ]);
    const replies = new Array<boolean>(grants.length);
    for (const [position, index] of ours.entries()) replies[index] = kindReplies[position]!;
    for (const [position, index] of theirs.entries()) replies[index] = mutexReplies[position]!;
    return replies;
  }

  release(grant: Grant): Promise<boolean> {
    return this.run('release', grant.key, () => this.modeOf(grant).release(grant));
  }

  validate(grant: Grant): Promise<boolean> {
    return this.run('validate', grant.key, () =>
      validateGrant(this.mode, this.fairKinds, this.commandConnections, this.options.now, grant),
    );
  }

  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /**
   * Test support (the conformance suite's kill hook): ends like a killed process. Every socket is
   * dropped at once, with no QUIT, no release and no queue leave; heartbeats and extensions stop.
   * What this client held or queued must end on the server by itself (ttl, waiter lease).
   */
  simulateCrash(): void {
    if (this.mode instanceof FairMode) this.mode.crash();
    this.fairKinds?.crash();
    const subscribers = [
      this.notifier?.close(),
      this.mode instanceof FairMode ? this.mode.subscriber() : undefined,
      this.fairKinds?.subscriber(),
    ];
    for (const connection of [...this.commandConnections, ...subscribers]) connection?.disconnect();
  }

  /** Test support (the fair suite's lost-message case): the grant subscriber's socket drops for good. */
  simulateLostGrantMessages(): void {
    for (const subscriber of [this.mode instanceof FairMode ? this.mode.subscriber() : undefined, this.fairKinds?.subscriber()]) {
      // A half-closed socket still delivers what is in flight: stop listening first.
      subscriber?.removeAllListeners('message');
      subscriber?.removeAllListeners('smessage');
      subscriber?.disconnect();
    }
  }

  private async shutdown(): Promise<void> {
    // New calls are refused from here on (this.closing); those already sent get their answers first,
    // within the time QUIT gets, then whatever still waits (a frozen server) gives up.
    if (this.inFlight.size > 0) await settledWithin([...this.inFlight], quitTimeoutMs);
    this.closed.abort(new BackendUnavailableError('close', { backend: this.name, cause: new Error('the backend is closed') }));
    this.deadlines.stop();
    const subscriber = this.notifier?.close();
    await Promise.all([this.mode.close(), this.fairKinds?.close()]);
    const grantSubscriber = this.mode instanceof FairMode ? this.mode.subscriber() : undefined;
    const kindSubscriber = this.fairKinds?.subscriber();
    const connections = [...this.owned, ...[subscriber, grantSubscriber, kindSubscriber].filter((connection) => connection !== undefined)];
    await Promise.all(connections.map((connection) => closeConnection(connection, quitTimeoutMs)));
  }

  /** After subscribing: is the lock still there? If not, the release happened before we listened. */
  private async stillHeld(connection: Redis | Cluster, key: string): Promise<boolean> {
    try {
      // Marks the key as waited on in the same step, so the next release publishes (mark-waiting.lua).
      return (
        Number(await withDeadline(runScript(connection, 'mark-waiting', [key, waitingKey(key)], [waitingMarkMs]), this.deadlineMs)) > 0
      );
    } catch {
      return true; // unknown: the waiter's own timer bounds the wait
    }
  }

  /**
   * Through the kit's call guard: typed errors, and the undo of an attempt given up on. `bounded`
   * false: the operation bounds itself (a queued acquire waits up to its own deadline). Only RedLock
   * adds a timer of its own; elsewhere ioredis' commandTimeout bounds the one command (hot path).
   */
  /**
   * ioredis rejects a command on a connection that cannot connect with "Reached the max retries per
   * request limit" (or "Connection is closed"): the connection's own error says why (refused, no
   * such host, wrong password), so that is what the caller gets.
   */
  private withConnectionReason(error: unknown): unknown {
    const generic =
      error instanceof Error &&
      (error.name === 'MaxRetriesPerRequestError' || /Connection is closed|Stream isn't writeable/.test(error.message));
    return (generic ? lastConnectionError(this.commandConnections) : undefined) ?? error;
  }

  private run<T>(
    action: string,
    key: string | undefined,
    operation: () => Promise<T>,
    bounded = true,
    undo?: (late: T | undefined) => Promise<unknown> | undefined,
    undoWithinMs?: number,
  ): Promise<T> {
    if (this.closing)
      return Promise.reject(new BackendUnavailableError(action, { key, backend: this.name, cause: new Error('the backend is closed') }));
    const timed = bounded && this.ownDeadline;
    const attempt = (): Promise<T> => operation().catch((error: unknown) => Promise.reject(this.withConnectionReason(error)));
    return guardCall(timed ? () => this.tracked(attempt()) : attempt, {
      action,
      key,
      backend: this.name,
      endpoint: this.endpoint,
      timeoutMs: timed ? this.deadlineMs : Number.POSITIVE_INFINITY,
      deadlines: this.deadlines,
      signal: timed ? this.closed.signal : undefined,
      undo,
      // The kit retries the undo until the server answers, within the attempt's ttl, until close().
      undoWithinMs,
      closed: this.closed.signal,
    });
  }

  /** Keeps `call` in `inFlight` until it settles (see shutdown). */
  private tracked<T>(call: Promise<T>): Promise<T> {
    this.inFlight.add(call);
    const forget = (): void => {
      this.inFlight.delete(call);
    };
    call.then(forget, forget);
    return call;
  }
}

/** Resolves once every promise has settled, or after `ms`, whichever comes first (an unref'd timer, cleared). */
function settledWithin(promises: readonly Promise<unknown>[], ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void Promise.allSettled(promises).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Whether ioredis itself bounds every command on `connection` (our connections always set it). */
function hasCommandTimeout(connection: Redis | Cluster): boolean {
  const options = connection instanceof Cluster ? connection.options.redisOptions : connection.options;
  return typeof options?.commandTimeout === 'number';
}

// The connections hold the password (ioredis keeps it in its options): print the mode only.
inspectSafely(RedisBackend, (backend) => ({ name: backend.name, closed: backend.isClosed }));
