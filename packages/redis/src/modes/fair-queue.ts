import {
  ServerQueue,
  type AcquireRequest,
  type AttemptResult,
  type Capabilities,
  type Grant,
  type GrantSink,
  type QueueAnswer,
} from '@deadbolt/core/adapter';
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { GrantChannel } from '../grant-channel.js';
import { fenceKey, siblingKey, slotOf, tagOfSlot } from '../keys.js';
import { standaloneGrantPrefix } from '../lua/fair.js';
import { pipelined } from '../pipeline.js';
import { pair, queueScript, runScript, type ScriptArgument, type ScriptName } from '../lua.js';
import { baseCapabilities } from './mode.js';

export const fairCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  fencing: true,
  reentrant: 'client',
  notifications: true,
  clock: 'server',
  fair: true,
  // Read-write locks and semaphores on the same queue machinery (modes/fair-kinds.ts);
  // multi-locks queued on every key in one script per slot, elections with queued followers (modes/fair.ts).
  readWrite: true,
  semaphore: true,
  multi: 'atomic',
  election: true,
});

/** What the fair mode needs besides the command connection. */
export interface FairSettings {
  /** The backend's name, for errors. */
  readonly backend: string;
  /** How long a silent waiter keeps its place (server clock); it heartbeats every third of it. */
  readonly waiterLeaseMs: number;
  /** Opens the subscriber socket of the grant channel (first contended acquire only). */
  readonly openSubscriber: () => Redis | Cluster;
  /** Redis Cluster: grants go out by SPUBLISH on per-slot shard channels (Redis 7 or later). */
  readonly cluster: boolean;
}

/** The fair scripts' KEYS: the lock, its fencing counter, its queue and its waiters' deadlines (one slot). */
export function fairKeys(key: string): string[] {
  return [key, fenceKey(key), siblingKey(key, 'queue'), siblingKey(key, 'waiters')];
}

/** One script call of a token: which script, on which KEYS, with which ARGV. */
export interface QueueScript {
  readonly name: ScriptName;
  readonly keys: readonly string[];
  readonly args: readonly ScriptArgument[];
}

/** A grant plus the ttl the queue extends it to: fields core treats as opaque. */
export interface QueueGrant extends Grant {
  validUntil?: number;
  readonly ttlMs: number;
}

/**
 * The Redis side of the fair mode's queue, shared by the fair mutex (modes/fair.ts) and its
 * read-write locks and semaphores (modes/fair-kinds.ts); they differ only in
 * the scripts a token runs (the `…Call` methods). The server grants in place to the head waiter and
 * sends one message to that waiter's client (primitives.md section 1.3). The waiting itself (the
 * re-checks, heartbeats, early messages, extensions of grants by message, leaving) is the kit's
 * ServerQueue; this is its port: the scripts, the tokens and the grant channel. Each instance has
 * its own client id, grant channel and subscriber socket.
 */
export abstract class FairQueue {
  readonly mode = 'fair' as const;
  readonly capabilities = fairCapabilities;
  readonly publishesReleases = false;

  protected readonly clientId = randomBytes(12).toString('hex');
  /** Every token of this instance starts so ("<clientId>."): the scripts read the rest. */
  protected readonly tokenStart = `${this.clientId}.`;
  private sequence = 0;
  protected readonly publish: 'PUBLISH' | 'SPUBLISH';
  private readonly grants: GrantChannel;
  /** Where the grant channel delivers: the queue's sink, set once the queue is built. */
  private sink: GrantSink | undefined;
  protected readonly queue: ServerQueue<QueueGrant>;
  /** The grant channel on a single server (one per instance), named once. */
  private readonly channel: string;

  constructor(
    protected readonly connection: Redis | Cluster,
    protected readonly settings: FairSettings,
  ) {
    this.channel = standaloneGrantPrefix + this.clientId;
    this.publish = settings.cluster ? 'SPUBLISH' : 'PUBLISH';
    this.grants = new GrantChannel(settings.openSubscriber, settings.cluster, (token, fence) => this.sink?.granted(token, fence));
    this.queue = new ServerQueue<QueueGrant>({
      backend: settings.backend,
      waiterLeaseMs: settings.waiterLeaseMs,
      tokenFor: (request) => this.tokenFor(request),
      attempt: (request, token) => this.attempt(request, token, '1').then(answerOf),
      grantOf: (request, token, fence, validUntil) => this.grantOf(request, token, fence, validUntil),
      leave: (request, token) => this.undoAcquire(request, token),
      heartbeat: async (tokens) => {
        const calls = tokens.map(({ request, token }) => this.heartbeatCall(request, token));
        // One call (one waiter, the usual case per client) goes as a prepared command: an ioredis
        // pipeline builds a closure per defined script, and every client's tick would pay it.
        const replies =
          calls.length === 1
            ? [await this.run(calls[0]!)]
            : await pipelined(
                this.connection,
                calls.map((call) => call.keys[0]!),
                (pipeline, index) => this.queueCall(pipeline, calls[index]!),
              );
        return replies.map((reply) => answerOf(pair(reply)));
      },
      extend: (grants, ttlMs) => this.renewMany(grants, ttlMs),
      listening: (key) => this.grants.ready(this.settings.cluster ? this.channelPrefix(key) + this.clientId : this.channel),
      subscribe: (sink) => {
        this.sink = sink;
      },
    });
  }

  /** The token of a new attempt: the backend asks for it before one (to undo it if no answer comes). */
  abstract tokenFor(request: AcquireRequest): string;

  /** The queueing script of `token` (join '1': queue if not free; '0': only take a free lock). */
  protected abstract acquireCall(request: AcquireRequest, token: string, join: '0' | '1'): QueueScript;

  /** The heartbeat of a queued `token`: its queueing script again (keeps the entry, or finds the grant). */
  protected heartbeatCall(request: AcquireRequest, token: string): QueueScript {
    return this.acquireCall(request, token, '1');
  }

  protected abstract releaseCall(key: string, token: string): QueueScript;
  protected abstract renewCall(key: string, token: string, ttlMs: number): QueueScript;
  /** Leaves the queue (or gives back a grant that raced the give-up, passing it on). */
  protected abstract leaveCall(key: string, token: string): QueueScript;

  /** A queueing script's reply as [held, value]: value is the fence when held, else the holder's pttl. */
  protected checked(_request: AcquireRequest, reply: [number, number]): [number, number] {
    return reply;
  }

  async tryAcquire(request: AcquireRequest, token = this.tokenFor(request)): Promise<AttemptResult> {
    const [held, value] = pair(await this.run(this.acquireCall(request, token, '0')));
    const [checkedHeld, checkedValue] = this.checked(request, [held, value]);
    if (checkedHeld === 1) return { acquired: true, grant: this.grantOf(request, token, checkedValue) };
    return { acquired: false, retryAfterMs: Math.max(0, checkedValue) };
  }

  /** Takes a free lock, or queues and waits for the grant; undefined at the deadline or on abort. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal, token = this.tokenFor(request)): Promise<Grant | undefined> {
    return this.queue.acquire(request, deadline, signal, token);
  }

  /** Undoes an attempt whose answer never came: the leave script removes its entry and passes on a grant it got. */
  undoAcquire(request: AcquireRequest, token: string): Promise<unknown> {
    return this.run(this.leaveCall(request.key, token));
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const sentAt = Date.now();
    const renewed = isOne(await this.run(this.renewCall(grant.key, grant.token, ttlMs)));
    if (renewed) this.queue.extended(grant as QueueGrant, sentAt, ttlMs);
    return renewed;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const sentAt = Date.now();
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) => this.queueCall(pipeline, this.renewCall(grants[index]!.key, grants[index]!.token, ttlMs[index]!)),
    );
    return replies.map((reply, index) => {
      const renewed = isOne(reply);
      if (renewed) this.queue.extended(grants[index] as QueueGrant, sentAt, ttlMs[index]!);
      return renewed;
    });
  }

  release(grant: Grant): Promise<boolean> {
    this.queue.forget(grant as QueueGrant);
    return this.run(this.releaseCall(grant.key, grant.token)).then(isOne);
  }

  /** A plain token under the key, as setnx's (the server's PX ends it). */
  async validate(grant: Grant): Promise<boolean> {
    return (await this.connection.get(grant.key)) === grant.token;
  }

  /** Waiters still queued leave (their core acquire is being aborted by the client's close anyway). */
  close(): Promise<void> {
    return this.queue.close();
  }

  /** As a killed process: no more ticks, re-checks or leaves (the backend drops the sockets). */
  crash(): void {
    this.queue.crash();
  }

  /** The grant channel's subscriber socket, if one was opened, for the backend to close. */
  subscriber(): Redis | Cluster | undefined {
    return this.grants.close();
  }

  // ---- the pieces ------------------------------------------------------------------------------

  /** "<clientId>.<ttl>.<letter><n><suffix>": unique per instance (random client id); the scripts read the ttl and the letter. */
  protected newToken(ttlMs: number, letter = '', suffix = ''): string {
    this.sequence += 1;
    return `${this.tokenStart}${ttlMs}.${letter}${this.sequence.toString(36)}${suffix}`;
  }

  /**
   * What a script prepends to the waiter's client id to name its grant channel. On Cluster the
   * channel must live in the key's slot (SPUBLISH from a script): one shard channel per slot.
   */
  protected channelPrefix(key: string): string {
    return this.settings.cluster ? `{${tagOfSlot(slotOf(key))}}:${standaloneGrantPrefix}` : standaloneGrantPrefix;
  }

  protected run(call: QueueScript): Promise<unknown> {
    return runScript(this.connection, call.name, call.keys, call.args);
  }

  private queueCall(pipeline: Parameters<typeof queueScript>[0], call: QueueScript): void {
    queueScript(pipeline, call.name, call.keys, call.args);
  }

  /** The queueing script (first attempt and re-check); a call that fails leaves, so no entry or grant is orphaned. */
  private async attempt(request: AcquireRequest, token: string, join: '0' | '1'): Promise<[number, number]> {
    try {
      return this.checked(request, pair(await this.run(this.acquireCall(request, token, join))));
    } catch (error) {
      // No answer (a frozen server runs it when it wakes), or a refused one: leave.
      void this.undoAcquire(request, token).catch(() => undefined);
      throw error;
    }
  }

  protected grantOf(request: AcquireRequest, token: string, fence: number, validUntil?: number): QueueGrant {
    const grant: QueueGrant = { key: request.key, owner: request.owner, token, fence, ttlMs: request.ttlMs };
    if (validUntil !== undefined) grant.validUntil = validUntil;
    return grant;
  }
}

/** [held, value]: value is the fence when held, else the holder's pttl (-1 or -2: unknown). */
function answerOf([held, value]: [number, number]): QueueAnswer {
  return held === 1 ? { held: true, fence: value } : { held: false, holderRemainingMs: value >= 0 ? value : null };
}

function isOne(reply: unknown): boolean {
  return Number(reply) === 1;
}
