import { BackendUnavailableError, closedError, DeadlineWheel, LockLostError, type Grant } from '@deadbolt/core/adapter';
import zookeeper from 'node-zookeeper-client';
import type { Client, State } from 'node-zookeeper-client';
import { stampConnects } from './connect-stamp.js';
import { Heartbeat } from './heartbeat.js';
import { ReadTimeout } from './read-timeout.js';
import { boundOnWheel, onServerContact } from './operations.js';
import { dropStaleFramesOnReconnect } from './stale-frames.js';
import { readWholeFrames } from './whole-frames.js';
import { wrapXids } from './xid-wrap.js';
import type { ResolvedZooKeeperOptions } from './options.js';

/** A held lock that must hear about the end of its session. */
interface Held {
  readonly grant: Grant;
  readonly onLost: (grant: Grant, cause: Error) => void;
}

/**
 * The part of node-zookeeper-client's private connection state close() needs to not leak a socket
 * or a timer: a connect under way arms `connectTimeoutHandler`, which only an error or a connected
 * socket clears, so a client closed while its server is down kept that timer for a connect timeout.
 */
interface WithSocket {
  readonly connectionManager?: { readonly socket?: { destroy(): void }; connectTimeoutHandler?: NodeJS.Timeout };
}

const closeGraceMs = 1_000;

/**
 * One ZooKeeper client and its session, opened on first use. A lock is an ephemeral node, so it
 * lives exactly as long as the session; this class tells holders when that ends:
 * - EXPIRED (the server says so on reconnect): every held lock is lost.
 * - DISCONNECTED (Curator's SUSPENDED): in doubt. With lostOn 'suspended' the locks are reported
 *   lost at once (Curator's StandardConnectionStateErrorPolicy); with 'expired' (default) only if
 *   the client stays disconnected for a whole session timeout, by which time the server has expired
 *   the session (Curator 3's simulated expiration). A leader election thus keeps holders' locks.
 * "A whole session timeout" counts from when the server last heard from us (a heartbeat's send
 * time), so the loss is reported no later than the server can expire the session. A connection
 * that goes silent, which node-zookeeper-client never reports, is closed after 2/3 of the session
 * timeout without a byte from the server (the Java client's read timeout, read-timeout.ts): a
 * disconnect, after which the session resumes on a new connection if the server can be reached.
 * After an expiry the client is dropped; the next operation opens a new session.
 */
export class ZooKeeperSession {
  private client: Client | undefined;
  /** Aborted when the current client's session ends (expired or given up): waiters stop waiting on it. */
  private ended = new AbortController();
  private connected = false;
  private everConnected = false;
  /** Date.now() at which the server last certainly heard from us (send time of an answered request). */
  private lastHeardAt = 0;
  private heartbeat: Heartbeat | undefined;
  /** When the current client last sent a ConnectRequest (connect-stamp.ts). */
  private connectSentAt: (() => number | undefined) | undefined;
  private readTimeout: ReadTimeout | undefined;
  private disconnectTimer: NodeJS.Timeout | undefined;
  private readonly held = new Map<string, Held>();
  private readonly waiters = new Set<() => void>();
  private closed = false;
  /** Clients being closed in the background (after an expiry): close() waits for them too. */
  private readonly closing = new Set<Promise<void>>();
  /** Every request's deadline, on one timer (operations.ts); stopped by close(). */
  private readonly deadlines = new DeadlineWheel();

  constructor(
    private readonly options: ResolvedZooKeeperOptions,
    private readonly backendName: string,
  ) {}

  /** A connected client, or BackendUnavailableError after connectTimeoutMs (or at `deadline`). */
  async ready(deadline: number, key?: string): Promise<Client> {
    if (this.closed) throw closedError('connect', key, this.backendName);
    const client = this.client ?? this.open();
    if (this.connected) return client;
    const until = Math.min(deadline, Date.now() + this.options.connectTimeoutMs);
    const connected = await new Promise<boolean>((resolve) => {
      const done = (value: boolean): void => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(value);
      };
      const wake = (): void => done(this.connected);
      const timer = setTimeout(() => done(false), Math.max(0, until - Date.now()));
      this.waiters.add(wake);
    });
    if (connected && this.client === client) return client;
    // Never connected: stop the client's endless reconnect loop. A session that exists (locks may be
    // held on it) is kept: the client keeps trying until it reconnects or the session is given up.
    if (this.client === client && !this.everConnected) this.drop(client);
    throw new BackendUnavailableError('connect', {
      key,
      backend: this.backendName,
      cause: new Error(`no ZooKeeper session with ${this.options.connectString} within ${this.options.connectTimeoutMs} ms`),
    });
  }

  /** The client when its session is connected right now (ready() without a promise), else undefined. */
  get connectedClient(): Client | undefined {
    return this.connected && !this.closed ? this.client : undefined;
  }

  /** Aborts when the session the last ready() returned ends. */
  get endedSignal(): AbortSignal {
    return this.ended.signal;
  }

  /** Whether the session is connected right now (used by renew to fail fast). */
  get isConnected(): boolean {
    return this.connected;
  }

  /** The session's id and password while connected (what Curator's KillSession uses to force an expiry). */
  credentials(): { readonly sessionId: Buffer; readonly password: Buffer } | undefined {
    if (!this.client || !this.connected) return undefined;
    return { sessionId: this.client.getSessionId(), password: this.client.getSessionPassword() };
  }

  /**
   * Local time until which the server surely keeps our session, and with it every lock held on it:
   * the send time of the last request it answered + the negotiated session timeout - the drift
   * allowance core applies to ttl leases (1% + 2 ms). Every held grant reads it live (SessionGrant
   * in backend.ts), so one answer moves the deadline of 10,000 locks by one assignment, and a
   * holder stalled past it (a GC pause, SIGSTOP) reads `held === false` at once, before any timer or
   * reply is processed: Curator treats the same silence as SUSPENDED.
   */
  get validUntil(): number {
    const timeoutMs = this.client?.getSessionTimeout() || this.options.sessionTimeoutMs;
    return this.lastHeardAt + timeoutMs - Math.ceil(timeoutMs * 0.01) - 2;
  }

  track(grant: Grant, onLost: (grant: Grant, cause: Error) => void): void {
    // The grant's own requests already moved lastHeardAt (operations.ts tells us of every answer).
    this.held.set(grant.token, { grant, onLost });
    this.heartbeat?.start();
  }

  /** The heartbeat stops itself at its next beat once nothing is held (see Heartbeat). */
  untrack(token: string): void {
    this.held.delete(token);
  }

  async close(): Promise<void> {
    this.closed = true;
    // Closing the session deletes every ephemeral node: a lock still held here (the client normally
    // releases all before closing the backend) is gone, and its holder must hear so.
    this.loseAll('the ZooKeeper backend was closed: its session and ephemeral nodes end');
    const client = this.client;
    if (client) await this.closeClient(client);
    await Promise.all([...this.closing]);
    for (const wake of [...this.waiters]) wake();
    this.deadlines.stop();
  }

  private open(): Client {
    const client = zookeeper.createClient(this.options.connectString, {
      sessionTimeout: this.options.sessionTimeoutMs,
      // The client's own retries are per request; our deadlines decide when to give up.
      spinDelay: Math.min(1_000, Math.max(50, Math.floor(this.options.connectTimeoutMs / 10))),
      retries: 0,
    });
    this.client = client;
    boundOnWheel(client, this.deadlines);
    onServerContact(client, (sentAt) => this.heard(client, sentAt));
    this.connectSentAt = stampConnects(client);
    dropStaleFramesOnReconnect(client);
    readWholeFrames(client);
    wrapXids(client);
    this.ended = new AbortController();
    this.connected = false;
    this.everConnected = false;
    this.heartbeat?.stop();
    // Only while locks are held (track starts it): an idle client needs no liveness of its own.
    this.heartbeat = new Heartbeat(
      client,
      Math.max(50, Math.floor(this.options.sessionTimeoutMs / 3)),
      (sentAt) => this.heard(client, sentAt),
      () => this.held.size > 0,
    );
    this.readTimeout?.stop();
    this.readTimeout = new ReadTimeout(client, () => Math.floor(((client.getSessionTimeout() || this.options.sessionTimeoutMs) * 2) / 3));
    client.on('state', (state: State) => this.onState(client, state));
    client.connect();
    return client;
  }

  private onState(client: Client, state: State): void {
    if (this.client !== client) return;
    const { State: States } = zookeeper;
    if (state === States.SYNC_CONNECTED || state === States.CONNECTED_READ_ONLY) {
      this.reconnected();
    } else if (state === States.DISCONNECTED) {
      this.suspend(client, 'the ZooKeeper connection was lost (SUSPENDED)');
    } else if (state === States.EXPIRED || state === States.AUTH_FAILED) {
      this.connected = false;
      this.loseAll(state === States.EXPIRED ? 'the ZooKeeper session expired' : 'ZooKeeper authentication failed');
      this.drop(client);
    }
    for (const wake of [...this.waiters]) wake();
  }

  private reconnected(): void {
    this.connected = true;
    this.everConnected = true;
    // The server accepted our session when it read our ConnectRequest: its send time counts.
    this.lastHeardAt = Math.max(this.lastHeardAt, this.connectSentAt?.() ?? Date.now());
    this.readTimeout?.start();
    clearTimeout(this.disconnectTimer);
    this.disconnectTimer = undefined;
  }

  /** Curator's SUSPENDED: in doubt. Lost at once (lostOn 'suspended') or when the session must have expired. */
  private suspend(client: Client, reason: string): void {
    this.connected = false;
    this.readTimeout?.stop();
    if (!this.everConnected) return;
    if (this.options.lostOn === 'suspended') this.loseAll(reason);
    if (this.disconnectTimer !== undefined) return;
    const timeoutMs = client.getSessionTimeout() || this.options.sessionTimeoutMs;
    // lastHeardAt is kept fresh by the heartbeat only while locks are held; without any, a waiter's
    // session keeps the old rule (a whole timeout from now) rather than be dropped on a stale time.
    const heardAt = this.held.size > 0 && this.lastHeardAt > 0 ? this.lastHeardAt : Date.now();
    this.disconnectTimer = setTimeout(
      () => {
        this.disconnectTimer = undefined;
        if (this.client !== client || this.connected) return;
        this.loseAll(`no answer from ZooKeeper for the whole session timeout (${timeoutMs} ms): the session has expired`);
        this.drop(client);
      },
      Math.max(0, heardAt + timeoutMs - Date.now()),
    );
  }

  private heard(client: Client, sentAt: number): void {
    if (this.client !== client) return;
    this.lastHeardAt = Math.max(this.lastHeardAt, sentAt);
  }

  private loseAll(reason: string): void {
    const held = [...this.held.values()];
    this.held.clear();
    this.heartbeat?.stop();
    for (const { grant, onLost } of held) onLost(grant, new LockLostError(reason, { key: grant.key, backend: this.backendName }));
  }

  /** Ends the session now (closeClient resets our state before its first await) and closes the client in the background. */
  private drop(client: Client): void {
    const closing = this.closeClient(client);
    this.closing.add(closing);
    void closing.finally(() => this.closing.delete(closing));
  }

  /** close() sends closeSession (ephemeral nodes go at once); if that cannot finish, the socket is destroyed. */
  private async closeClient(client: Client): Promise<void> {
    if (this.client === client) {
      this.heartbeat?.stop();
      this.readTimeout?.stop();
      this.client = undefined;
      this.ended.abort(new Error('the ZooKeeper session ended'));
    }
    this.connected = false;
    clearTimeout(this.disconnectTimer);
    this.disconnectTimer = undefined;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, closeGraceMs);
      function finish(): void {
        clearTimeout(timer);
        client.removeListener('disconnected', finish);
        const manager = (client as unknown as WithSocket).connectionManager;
        manager?.socket?.destroy();
        clearTimeout(manager?.connectTimeoutHandler);
        resolve();
      }
      client.once('disconnected', finish);
      client.close();
    });
    client.removeAllListeners();
  }
}
