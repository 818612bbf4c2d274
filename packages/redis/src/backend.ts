import {
  endpointOf,
  inspectSafely,
  type AcquireRequest,
  type AttemptResult,
  type Capabilities,
  type ElectionDriver,
  type Grant,
  type HoldDriver,
  type LockBackend,
  type MultiDriver,
  type OperationsDriver,
  type RunsDriver,
} from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { closeConnection } from './connections.js';
import { electionDriver } from './election.js';
import { CallGuard, hasCommandTimeout, quitTimeoutMs } from './guard.js';
import { holdDriver } from './hold-driver.js';
import type { LockMode, ModeRoom } from './modes/mode.js';
import { modeEntry } from './modes/table.js';
import { multiDriver } from './multi.js';
import { operationsDriver, RedisOperations } from './operations.js';
import type { ResolvedRedisOptions } from './options.js';
import { runsDriver } from './run-records.js';
import { TokenSource } from './token.js';

/** Extra time the safety-net deadline allows over ioredis' own command timeout, which should fire first. */
const deadlineSlackMs = 100;

/** What the fair mode offers that another mode lacks, for a refused primitive's error. */
const fairOnly: Partial<Record<keyof Capabilities, string>> = {
  readWrite: 'read-write locks',
  semaphore: 'semaphores',
};

/**
 * The Redis LockBackend: builds its mode from the mode table (modes/table.ts), owns the connections,
 * and sends every call through the call guard (guard.ts: typed errors naming the key and `name`,
 * never the URL; deadlines; close). The backend is the mutex's driver; what the mode offers beside
 * it is a driver of its own (kinds, multi, election, operations, runs), each the keeper of its holds.
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
  /** fair: read-write locks and semaphores, on the queue beside the mutex's (modes/fair-kinds.ts). */
  readonly kinds?: HoldDriver;
  readonly multi: MultiDriver;
  /** setnx and fair: elections on the lock, the fence as term (election.ts, modes/fair.ts). */
  readonly election?: ElectionDriver;
  readonly operations: OperationsDriver;
  readonly runs: RunsDriver;

  private readonly room: ModeRoom;
  private readonly mutex: HoldDriver;
  /** Every command connection, owned or the user's: only simulateCrash() drops the user's. */
  private readonly commandConnections: readonly (Redis | Cluster)[];
  private readonly owned: readonly (Redis | Cluster)[];
  private readonly guard: CallGuard;
  private closing: Promise<void> | undefined;

  constructor(options: ResolvedRedisOptions) {
    const entry = modeEntry(options.mode);
    this.name = `redis:${options.mode}`;
    this.endpoint = options.client !== undefined || options.clients !== undefined ? undefined : endpointOf(options.nodes);
    const opened = entry.connect(options);
    this.commandConnections = opened.map((one) => one.connection);
    this.owned = opened.filter((one) => one.owned).map((one) => one.connection);
    this.callTimeoutMs = entry.roundsPerCall * options.commandTimeoutMs + deadlineSlackMs;
    const guard = new CallGuard({
      name: this.name,
      endpoint: this.endpoint,
      deadlineMs: this.callTimeoutMs,
      connections: this.commandConnections,
      ownDeadline: entry.ownDeadline || !this.commandConnections.every(hasCommandTimeout),
    });
    this.guard = guard;
    const room = entry.create({ options, name: this.name, connections: this.commandConnections, deadlineMs: this.callTimeoutMs });
    this.room = room;
    this.capabilities = room.mutex.capabilities;
    // One driver per keeper: holds of one mode go back to the driver that issued them.
    const tokens = new TokenSource();
    const drivers = new Map<LockMode, HoldDriver>();
    const driverOf = (mode: LockMode, acquire = mode === room.kinds ? room.kinds.acquire.bind(room.kinds) : undefined): HoldDriver => {
      let driver = drivers.get(mode);
      if (driver === undefined) drivers.set(mode, (driver = holdDriver(mode, guard, tokens, acquire)));
      return driver;
    };
    this.mutex = driverOf(room.mutex, room.acquire);
    if (this.mutex.acquire) this.acquire = this.mutex.acquire;
    if (room.waitForChange) this.waitForChange = room.waitForChange;
    if (room.kinds) this.kinds = driverOf(room.kinds);
    this.multi = multiDriver(room.multi, room.multi?.keeper && driverOf(room.multi.keeper), guard);
    const ops = new RedisOperations(this.commandConnections, options.mode === 'getset' ? options.now : undefined);
    if (room.election) this.election = electionDriver(room.election, driverOf(room.election.keeper), guard, (key) => ops.leaderInfo(key));
    this.operations = operationsDriver(ops, guard);
    this.runs = runsDriver(this.commandConnections[0]!, guard);
  }

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.mutex.tryAcquire(request);
  }

  renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return this.mutex.renew(grant, ttlMs);
  }

  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    return this.mutex.renewMany!(grants, ttlMs);
  }

  release(grant: Grant): Promise<boolean> {
    return this.mutex.release(grant);
  }

  validate(grant: Grant): Promise<boolean> {
    return this.mutex.validate!(grant);
  }

  /** The fair mode offers read-write locks and semaphores: name it where another mode refuses them. */
  capabilityHint(capability: keyof Capabilities): string | undefined {
    const what = fairOnly[capability];
    if (what === undefined || this.capabilities[capability] === true) return undefined;
    return `Redis offers ${what} in the fair mode: ?mode=fair in the URL, or mode: 'fair'`;
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
