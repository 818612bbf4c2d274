import type { Etcd3, ILeaseKeepAliveResponse } from 'etcd3';
import { callOptions } from './client.js';
import { leaseHex } from './keys.js';
import type { ResolvedEtcdOptions } from './options.js';

/** Why a lease ended before the client let it go. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

type Listener = (lease: SessionLease, cause: Error) => void;

/**
 * The client's one lease (Go's `concurrency.Session`): granted on first use, kept alive on one
 * keep-alive stream every TTL/3 (as Go does), and every hold of the client rides it. `validUntil`
 * is the send time of the last answered keep-alive + TTL - drift, on the local clock: when it passes
 * with no answer, the server may already have expired the lease (and deleted our keys), so the lease
 * is declared lost at once, before anyone else can be granted what we held.
 */
export class SessionLease {
  readonly hex: string;
  lost = false;
  validUntil: number;
  private stream: Awaited<ReturnType<Etcd3['leaseClient']['leaseKeepAlive']>> | undefined;
  /** Send times of keep-alives not yet answered, in order (the stream answers in order). */
  private sent: number[] = [];
  private beat: NodeJS.Timeout | undefined;
  private expiry: NodeJS.Timeout | undefined;
  private reopen: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: Etcd3,
    readonly id: string,
    readonly ttlMs: number,
    grantSentAt: number,
    private readonly lose: (lease: SessionLease, cause: Error) => void,
  ) {
    this.hex = leaseHex(id);
    this.validUntil = this.validFrom(grantSentAt);
    this.armExpiry();
    this.beat = setInterval(() => this.sendKeepAlive(), Math.max(1, Math.floor(ttlMs / 3)));
    this.beat.unref();
    this.openStream();
  }

  /** Stops keeping the lease alive (no revoke: see EtcdSession.close). */
  stop(): void {
    clearInterval(this.beat);
    clearTimeout(this.expiry);
    clearTimeout(this.reopen);
    if (this.stream !== undefined) closeStream(this.stream);
    this.stream = undefined;
  }

  /** Clocks that run at slightly different rates: 1% + 50 ms, as core's drift allowance is sized. */
  private validFrom(sentAt: number): number {
    return sentAt + this.ttlMs - Math.ceil(this.ttlMs / 100) - 50;
  }

  private armExpiry(): void {
    clearTimeout(this.expiry);
    this.expiry = setTimeout(
      () => {
        if (Date.now() >= this.validUntil) this.fail(new LeaseLostError('the lease could not be kept alive before its TTL ran out'));
        else this.armExpiry();
      },
      Math.max(0, this.validUntil - Date.now()),
    );
    this.expiry.unref();
  }

  private openStream(): void {
    if (this.lost) return;
    this.client.leaseClient.leaseKeepAlive().then(
      (stream) => {
        if (this.lost) {
          closeStream(stream);
          return;
        }
        this.stream = stream;
        this.sent = [];
        stream.on('data', (answer: ILeaseKeepAliveResponse) => this.answered(answer));
        const broken = (): void => {
          if (this.stream !== stream) return;
          this.stream = undefined;
          this.retryStream();
        };
        stream.on('error', broken);
        stream.on('end', broken);
        this.sendKeepAlive();
      },
      () => this.retryStream(),
    );
  }

  private retryStream(): void {
    if (this.lost) return;
    clearTimeout(this.reopen);
    this.reopen = setTimeout(() => this.openStream(), 200);
    this.reopen.unref();
  }

  private sendKeepAlive(): void {
    const stream = this.stream;
    if (stream === undefined || this.lost) return;
    this.sent.push(Date.now());
    stream.write({ ID: this.id });
  }

  private answered(answer: ILeaseKeepAliveResponse): void {
    const sentAt = this.sent.shift();
    if (this.lost || sentAt === undefined) return;
    const ttlSeconds = Number(answer.TTL);
    if (!(ttlSeconds > 0)) {
      this.fail(new LeaseLostError('etcd says the lease has expired or was revoked'));
      return;
    }
    this.validUntil = Math.max(this.validUntil, this.validFrom(sentAt));
    this.armExpiry();
  }

  /** Ends the lease here and reports it lost (close, or a keep-alive that came too late). */
  end(cause: Error): void {
    this.fail(cause);
  }

  private fail(cause: Error): void {
    if (this.lost) return;
    this.lost = true;
    this.stop();
    this.lose(this, cause);
  }
}

/**
 * Ends a keep-alive stream at once. end() alone half-closes it and waits for the server's end, which
 * a silent link never brings (its connection then outlived close()); cancel() alone made etcd3 take
 * the cancellation for a failed member and reset every client of it. end() first, so the stream is
 * no longer writable and etcd3 ignores its error, then cancel().
 */
function closeStream(stream: { end(): void; cancel(): void }): void {
  stream.end();
  stream.cancel();
}

/** Grants the lease on first use, and a new one after a loss; close() revokes it. */
export class EtcdSession {
  private current: SessionLease | undefined;
  private granting: Promise<SessionLease> | undefined;
  private readonly listeners = new Set<Listener>();

  constructor(
    readonly client: Etcd3,
    private readonly options: ResolvedEtcdOptions,
  ) {}

  /** The live lease, granted first when there is none (bounded by `deadline` and callTimeoutMs). */
  lease(deadline?: number): Promise<SessionLease> {
    const current = this.current;
    if (current !== undefined && !current.lost) return Promise.resolve(current);
    this.granting ??= this.grant(deadline).finally(() => {
      this.granting = undefined;
    });
    return this.granting;
  }

  /** Called once per lost lease, for every hold that rode it. */
  onLost(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Stops the keep-alives and revokes the lease (our keys go at once), within one call's deadline.
   * Every hold that rode the lease is reported lost first: it ends whether or not the revoke lands.
   */
  async close(): Promise<void> {
    const lease = this.current ?? (await this.granting?.catch(() => undefined));
    this.current = undefined;
    if (lease === undefined || lease.lost) return;
    lease.end(new LeaseLostError('the etcd backend was closed: its lease is revoked'));
    await this.client.leaseClient.leaseRevoke({ ID: lease.id }, callOptions(this.options)).catch(() => undefined);
  }

  private async grant(deadline: number | undefined): Promise<SessionLease> {
    const sentAt = Date.now();
    const answer = await this.client.leaseClient.leaseGrant({ TTL: this.options.sessionTtlSeconds }, callOptions(this.options, deadline));
    // The server may raise a TTL below its minimum (1.5 x the election timeout): keep what it granted.
    const ttlMs = Number(answer.TTL) * 1_000;
    const lease = new SessionLease(this.client, answer.ID, ttlMs, sentAt, (lost, cause) => {
      if (this.current === lost) this.current = undefined;
      for (const listener of this.listeners) listener(lost, cause);
    });
    this.current = lease;
    return lease;
  }
}
