import {
  endpointOf,
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
import type { Cluster, Redis } from 'ioredis';
import { closeConnection } from './connections.js';
import { CallGuard, hasCommandTimeout, quitTimeoutMs } from './guard.js';
import type { LockMode, ModeRoom } from './modes/mode.js';
import { modeEntry } from './modes/table.js';
import { bySlotThenKey } from './multi.js';
import { operatorMethods, RedisOperations } from './operations.js';
import type { ResolvedRedisOptions } from './options.js';
import { runRecordsOn } from './run-records.js';
import { TokenSource } from './token.js';

/** Extra time the safety-net deadline allows over ioredis' own command timeout, which should fire first. */
const deadlineSlackMs = 100;

/**
 * The Redis LockBackend: builds its mode from the mode table (modes/table.ts), owns the connections,
 * and sends every call through the call guard (guard.ts: typed errors naming the key and `name`,
 * never the URL; deadlines; close). What a mode offers beside its mutex is wired as it comes.
 */
export class RedisBackend implements LockBackend {
  readonly name: string;
  readonly capabilities: Capabilities;
  readonly defaultPrefix = 'deadbolt:';
  /** The configured nodes (or Sentinels), for error messages; the app's own client has none we know. */
  readonly endpoint: string | undefined;
  /** Every call settles within callTimeoutMs (the guard): core adds no timer of its own per call. */
  readonly boundsCalls = true;
  readonly callTimeoutMs: number;
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
  /** setnx and fair: elections on the lock, the fence as term (election.ts, modes/fair-kinds.ts). */
  readonly campaign?: (request: CampaignRequest, deadline: number, signal: AbortSignal) => Promise<TermGrant | undefined>;
  readonly leader?: (key: string) => Promise<string | undefined>;
  /** The operator methods (operations.ts), assigned in the constructor. */
  declare readonly inspect: OperationsBackend['inspect'];
  declare readonly forceRelease: OperationsBackend['forceRelease'];
  declare readonly listKeys: OperationsBackend['listKeys'];
  declare readonly forcedBy: OperationsBackend['forcedBy'];
  declare readonly leaderInfo?: (key: string) => Promise<{ id: string; term: number } | undefined>;

  private readonly room: ModeRoom;
  private readonly mode: LockMode;
  /** Every command connection, owned or the user's: only simulateCrash() drops the user's. */
  private readonly commandConnections: readonly (Redis | Cluster)[];
  private readonly owned: readonly (Redis | Cluster)[];
  private readonly guard: CallGuard;
  private readonly run: CallGuard['run'];
  private closing: Promise<void> | undefined;
  /** Attempt tokens (what an undo compares), unique per backend and attempt. */
  private readonly tokens = new TokenSource();

  constructor(options: ResolvedRedisOptions) {
    const entry = modeEntry(options.mode);
    this.name = `redis:${options.mode}`;
    this.endpoint = options.client !== undefined || options.clients !== undefined ? undefined : endpointOf(options.nodes);
    const opened = entry.connect(options);
    this.commandConnections = opened.map((one) => one.connection);
    this.owned = opened.filter((one) => one.owned).map((one) => one.connection);
    this.callTimeoutMs = entry.roundsPerCall * options.commandTimeoutMs + deadlineSlackMs;
    this.guard = new CallGuard({
      name: this.name,
      endpoint: this.endpoint,
      deadlineMs: this.callTimeoutMs,
      connections: this.commandConnections,
      ownDeadline: entry.ownDeadline || !this.commandConnections.every(hasCommandTimeout),
    });
    this.run = this.guard.run.bind(this.guard);
    const room = entry.create({ options, name: this.name, connections: this.commandConnections, deadlineMs: this.callTimeoutMs });
    this.room = room;
    this.mode = room.mutex;
    this.capabilities = room.mutex.capabilities;
    const keysOf = (requests: readonly AcquireRequest[]): string => requests.map((request) => request.key).join(', ');
    if (room.waitForChange) this.waitForChange = room.waitForChange;
    if (room.tryAcquireMany) {
      const many = room.tryAcquireMany;
      this.tryAcquireMany = (requests) => this.run('acquire', keysOf(requests), () => many(requests));
    }
    if (room.acquireMany) {
      const many = room.acquireMany;
      this.acquireMany = (requests, deadline, signal) =>
        this.run('acquire', keysOf(requests), () => many(requests, deadline, signal), false);
    }
    if (room.campaign && room.leader) {
      const { campaign, leader } = room;
      this.campaign = (request, deadline, signal) => this.run('elect', request.key, () => campaign(request, deadline, signal), false);
      this.leader = (key) => this.run('leader', key, () => leader(key));
    }
    if (room.acquire) {
      const { acquire, kinds } = room;
      // Core skips its plain first attempt: acquire() takes a free lock in the same single script.
      this.acquireQueuesAtOnce = true;
      this.acquire = (request, deadline, signal) =>
        this.run(
          'acquire',
          request.key,
          () =>
            request.kind !== undefined && kinds !== undefined
              ? kinds.acquire(request, deadline, signal)
              : acquire(request, deadline, signal),
          false,
        );
    }
    Object.assign(this, runRecordsOn(this.commandConnections[0]!, this.run));
    const ops = new RedisOperations(this.commandConnections, options.mode === 'getset' ? options.now : undefined);
    Object.assign(this, operatorMethods(ops, this.run, this.leader !== undefined));
  }

  /** The mode that serves a request: the fair mode's kinds (read, write, permit) have their own scripts. */
  private modeFor(request: AcquireRequest): LockMode {
    return request.kind !== undefined && this.room.kinds !== undefined ? this.room.kinds : this.mode;
  }

  private modeOf(grant: Grant): LockMode {
    return this.room.kinds?.owns(grant) === true ? this.room.kinds : this.mode;
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
        // undo runs after the attempt, so no lease is left for the whole ttl.
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
    const kinds = this.room.kinds;
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
    return this.run('validate', grant.key, () => this.modeOf(grant).validate(grant));
  }

  get isClosed(): boolean {
    return this.guard.isClosed;
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
    this.room.crash();
    for (const connection of [...this.commandConnections, ...this.room.subscribers()]) connection.disconnect();
  }

  /** Test support (the fair suite's lost-message case): the grant subscriber's socket drops for good. */
  simulateLostGrantMessages(): void {
    this.room.dropGrantMessages();
  }

  private async shutdown(): Promise<void> {
    // New calls are refused from here on; those already sent get their answers first, within the
    // time QUIT gets, then whatever still waits (a frozen server) gives up.
    await this.guard.close();
    await this.room.close();
    const connections = [...this.owned, ...this.room.subscribers()];
    await Promise.all(connections.map((connection) => closeConnection(connection, quitTimeoutMs)));
  }
}

// The connections hold the password (ioredis keeps it in its options): print the mode only.
inspectSafely(RedisBackend, (backend) => ({ name: backend.name, closed: backend.isClosed }));
