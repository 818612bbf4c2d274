import { BackendUnavailableError, DeadboltError, type AcquireRequest, type AttemptResult, type Capabilities, type Grant, type LockBackend } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { closeConnection, openCommandConnection, openMasters } from './connections.js';
import { DeadlineExceededError, withDeadline } from './deadline.js';
import { releaseChannel } from './keys.js';
import { FairMode } from './modes/fair.js';
import { GetsetMode } from './modes/getset.js';
import { HashReentrantMode } from './modes/hash-reentrant.js';
import type { LockMode } from './modes/mode.js';
import { RedlockMode } from './modes/redlock.js';
import { SetnxMode } from './modes/setnx.js';
import { ReleaseNotifier } from './notifier.js';
import type { ResolvedRedisOptions } from './options.js';

/** A connection in subscriber mode can run nothing else: it is a second socket, ours to close. */
function subscriberOf(connection: Redis | Cluster): Redis | Cluster {
  const subscriber = connection.duplicate();
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
  /** Present only for modes that publish releases (setnx, hash-reentrant); core polls for the others. */
  readonly waitForChange?: (key: string, maxWaitMs: number, signal: AbortSignal) => Promise<void>;
  /** Present only for the fair mode: the server queues the waiter and grants it in place. */
  readonly acquire?: (request: AcquireRequest, deadline: number, signal: AbortSignal) => Promise<Grant | undefined>;
  readonly acquireQueuesAtOnce?: boolean;

  private readonly mode: LockMode;
  private readonly owned: (Redis | Cluster)[] = [];
  private readonly notifier: ReleaseNotifier | undefined;
  private readonly deadlineMs: number;
  /** Core's call guard bounds each call a little above this (issue 14). */
  readonly callTimeoutMs: number;
  /**
   * Single-server and Cluster modes send one command per call, which ioredis' commandTimeout already
   * bounds (core's guard is the safety net above it): no second timer on the hot path. RedLock
   * fans out to several masters and keeps its own deadline.
   */
  private readonly ownDeadline: boolean;
  private closing: Promise<void> | undefined;
  /** Operations the deadline gave up on (see tryAcquire). Weak: they are forgotten with the promise. */
  private readonly gaveUp = new WeakSet<Promise<unknown>>();

  constructor(private readonly options: ResolvedRedisOptions) {
    this.name = `redis:${options.mode}`;
    if (options.mode === 'redlock') {
      const masters = openMasters(options);
      for (const master of masters) if (master.owned) this.owned.push(master.connection);
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
      if (this.mode instanceof FairMode) {
        const fair = this.mode;
        this.acquireQueuesAtOnce = true;
        this.acquire = (request, deadline, signal) => this.run('acquire', request.key, () => fair.acquire(request, deadline, signal), false);
      }
    }
    this.capabilities = this.mode.capabilities;
    this.callTimeoutMs = this.deadlineMs;
    this.ownDeadline = options.mode === 'redlock';
  }

  private singleMode(connection: Redis | Cluster): LockMode {
    switch (this.options.mode) {
      case 'setnx':
        return new SetnxMode(connection);
      case 'hash-reentrant':
        return new HashReentrantMode(connection);
      case 'getset':
        return new GetsetMode(connection, this.options.now);
      case 'fair':
        return new FairMode(connection, { waiterLeaseMs: this.options.waiterLeaseMs, openSubscriber: () => subscriberOf(connection) });
      default:
        throw new Error(`unreachable mode ${this.options.mode}`);
    }
  }

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    if (!this.ownDeadline) return this.run('acquire', request.key, () => this.mode.tryAcquire(request));
    return this.run('acquire', request.key, () => {
      const attempt = this.mode.tryAcquire(request);
      // If the safety-net deadline gives up first, a grant that lands later must not stay behind.
      attempt.then(
        (result) => {
          if (result.acquired && this.gaveUp.has(attempt)) void this.mode.release(result.grant).catch(() => undefined);
        },
        () => undefined,
      );
      return attempt;
    });
  }

  renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return this.run('renew', grant.key, () => this.mode.renew(grant, ttlMs));
  }

  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    if (grants.length === 0) return Promise.resolve([]);
    return this.run('renew', grants.length === 1 ? grants[0]!.key : undefined, () => this.mode.renewMany(grants, ttlMs));
  }

  release(grant: Grant): Promise<boolean> {
    return this.run('release', grant.key, () => this.mode.release(grant));
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const subscriber = this.notifier?.close();
    await this.mode.close();
    const grantSubscriber = this.mode instanceof FairMode ? this.mode.subscriber() : undefined;
    const connections = [...this.owned, ...[subscriber, grantSubscriber].filter((connection) => connection !== undefined)];
    await Promise.all(connections.map((connection) => closeConnection(connection, quitTimeoutMs)));
  }

  /** After subscribing: is the lock still there? If not, the release happened before we listened. */
  private async stillHeld(connection: Redis | Cluster, key: string): Promise<boolean> {
    try {
      return (await withDeadline(connection.exists(key), this.deadlineMs)) > 0;
    } catch {
      return true; // unknown: the waiter's own timer bounds the wait
    }
  }

  /** `bounded` false: the operation bounds itself (a queued acquire waits up to its own deadline). */
  private async run<T>(action: string, key: string | undefined, operation: () => Promise<T>, bounded = true): Promise<T> {
    if (this.closing) throw new BackendUnavailableError(action, { key, backend: this.name, cause: new Error('the backend is closed') });
    const pending = operation();
    try {
      return bounded && this.ownDeadline ? await withDeadline(pending, this.deadlineMs) : await pending;
    } catch (error) {
      if (error instanceof DeadlineExceededError) this.gaveUp.add(pending);
      if (error instanceof DeadboltError) throw error;
      throw new BackendUnavailableError(action, { key, backend: this.name, cause: error });
    }
  }
}
