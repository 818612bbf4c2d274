import { KeyedWaiters } from '@deadbolt/core/adapter';
import type { ListenMember, ListenSession } from './listen-session.js';

/** The client's own grant channel (lease mode's queue): one channel per client, never per key. */
export interface GrantSubscription {
  readonly channel: string;
  /** A grant message: the payload the server's grant function sent ("<token> <fence>"). */
  onGrant(payload: string): void;
  /** The connection broke: messages may have been missed, so every waiter re-checks. */
  onBroken(): void;
}

/**
 * A backend's notifications, on its process's shared LISTEN session (listen-session.ts): the release
 * channel for election followers (waiters register by key; a NOTIFY whose payload is the key wakes the
 * oldest of them) and the client's own grant channel for the lease queue. If the session breaks,
 * every waiter wakes (core re-attempts), the queue re-checks, and the next wait reconnects.
 */
export class ReleaseListener implements ListenMember {
  private session: ListenSession | undefined;
  /** The adapter kit's waiter set: a NOTIFY wakes the longest-waiting local waiter of its key (FIFO hand-off). */
  private readonly waiters = new KeyedWaiters();
  private closed = false;
  private grants: GrantSubscription | undefined;
  private grantsListening: Promise<void> | undefined;
  /** Test support: grant messages are dropped from now on (the session stays up). */
  dropGrants = false;

  constructor(
    /** The process's session for this backend's settings (looked up at each join: a session ends with its last member). */
    private readonly sessionFor: () => ListenSession,
    private readonly channel: string,
    /** The process's session for these settings if there is one (never creates it). */
    private readonly existingSession: () => ListenSession | undefined = () => undefined,
  ) {}

  /**
   * Resolves on a release of `key`, after `maxWaitMs`, or at once if `isFree()` (asked only once
   * LISTEN is active) says the lock is already free. Rejects only on abort.
   */
  async wait(key: string, maxWaitMs: number, signal: AbortSignal, isFree: () => Promise<boolean>): Promise<void> {
    signal.throwIfAborted();
    // Register first, then listen, then look: a release between our attempt and LISTEN is seen by
    // isFree(). Cannot listen: the timer bounds the wait, core polls.
    await this.waiters.wait(key, Math.max(0, maxWaitMs), signal, () => this.listen(this.channel).then(isFree));
  }

  /** Registers the grant channel (once); LISTEN happens on the next grantsReady(). */
  subscribeGrants(subscription: GrantSubscription): void {
    this.grants ??= subscription;
  }

  /**
   * True when the grant channel is being listened to now; otherwise a promise settled once it is
   * (or once that failed: the waiter's re-checks still find its grant).
   */
  grantsReady(): true | Promise<void> {
    const grants = this.grants;
    if (grants === undefined) return Promise.resolve();
    if (this.session?.isListening(grants.channel) === true) return true;
    this.grantsListening ??= this.listen(grants.channel)
      .catch(() => undefined)
      .finally(() => {
        this.grantsListening = undefined;
      });
    return this.grantsListening;
  }

  /** A grant a release here made (its reply named the waiter's channel): to a waiter in this process at once. */
  deliverLocally(channel: string, payload: string): void {
    (this.session ?? this.existingSession())?.deliverLocally(channel, payload);
  }

  notify(channel: string, payload: string): void {
    if (channel === this.channel) this.waiters.wakeOne(payload);
    else if (channel === this.grants?.channel && !this.dropGrants) this.grants.onGrant(payload);
  }

  broken(): void {
    this.waiters.wakeEverything();
    this.grants?.onBroken();
  }

  private listen(channel: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error('closed'));
    if (this.session === undefined) {
      this.session = this.sessionFor();
      this.session.join(this);
    }
    return this.session.listen(this, channel);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.waiters.wakeEverything();
    this.session?.leave(this);
    this.session = undefined;
  }

  /** Test support (a killed process): its channels are dropped with no goodbye, nothing is woken. */
  crash(): void {
    this.closed = true;
    this.grants = undefined;
    this.session?.leave(this);
    this.session = undefined;
  }
}
