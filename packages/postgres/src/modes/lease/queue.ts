import {
  InvalidArgumentError,
  type AcquireRequest,
  type Grant,
  type GrantSink,
  type HeartbeatAnswer,
  type QueueAnswer,
  type QueuedToken,
  type ServerQueuePort,
} from '@deadbolt/core/adapter';
import { randomToken } from '../../token.js';
import type { ModeContext } from '../mode.js';
import type { kindsSql } from './kinds-sql.js';
import type { leaseSql } from './sql.js';

/** What one acquire function call answers. */
export interface AttemptRow {
  readonly held: boolean;
  readonly fence: string | null;
  readonly remaining_ms: number | null;
  /** A semaphore's call only: the size it is in use with when that is not the caller's (nothing was taken or queued). */
  readonly recorded_permits?: number | null;
  /**
   * When the statement left on a connected session (after any connect, schema check and queueing
   * here): the server's lease starts later, so a grant's lease is bounded from this, not from the
   * call (a fresh session's connect and plpgsql compile must not eat a 300 ms lease).
   */
  sentAt: number;
}

/** A grant of `request` (its lock-delay kept on it: renewals extend the row by it too). */
export function grantOf(request: AcquireRequest, token: string, fence: number, validUntil?: number): Grant {
  const lockDelayMs = request.lockDelayMs ?? 0;
  const grant: Grant = { key: request.key, owner: request.owner, token, fence, ...(lockDelayMs > 0 ? { lockDelayMs } : {}) };
  if (validUntil !== undefined) grant.validUntil = validUntil;
  return grant;
}

/**
 * The lease mode's server queue (sql.ts, kinds-sql.ts) as the kit's ServerQueue reaches it: one
 * acquire function call queues a token (or takes a free lock, or re-checks), the leave function
 * removes it (passing on a grant that raced the give-up), one heartbeat statement keeps every
 * waiter of this client alive, and a grant made in place arrives as a message on this client's
 * channel ("<token> <fence>"). A grant made by another client's statement carries a short claim,
 * which the queue extends to the ttl by `extend` (renewMany).
 */
export class LeaseQueueServer implements ServerQueuePort<Grant> {
  readonly backend: string;
  readonly waiterLeaseMs: number;

  constructor(
    private readonly context: ModeContext,
    private readonly sql: { readonly lock: ReturnType<typeof leaseSql>; readonly kinds: ReturnType<typeof kindsSql> },
    /** This client's grant channel: one per backend, never per key. */
    private readonly channel: string,
    readonly extend: (grants: readonly Grant[], ttlMs: readonly number[]) => Promise<readonly boolean[]>,
  ) {
    this.backend = context.name;
    this.waiterLeaseMs = context.options.waiterLeaseMs;
  }

  tokenFor(): string {
    return randomToken();
  }

  async attempt(request: AcquireRequest, token: string): Promise<QueueAnswer> {
    const row = await this.call(request, token, true);
    return row.held
      ? { held: true, fence: Number(row.fence), sentAt: row.sentAt }
      : { held: false, holderRemainingMs: row.remaining_ms, sentAt: row.sentAt };
  }

  grantOf(request: AcquireRequest, token: string, fence: number, validUntil: number | undefined): Grant {
    return grantOf(request, token, fence, validUntil);
  }

  /** One call of the acquire function (`join`: queue when busy). A call given up on (a frozen server answers late) is undone by a leave. */
  async call(request: AcquireRequest, token: string, join: boolean): Promise<AttemptRow> {
    const { statements, options } = this.context;
    const kind = request.kind;
    const [text, params] =
      kind === undefined
        ? [
            this.sql.lock.acquire,
            [request.key, token, request.ttlMs + (request.lockDelayMs ?? 0), join, this.channel, options.waiterLeaseMs],
          ]
        : [
            this.sql.kinds.acquire,
            [
              request.key,
              token,
              kind.type,
              kind.type === 'permit' ? kind.permits : 0,
              kind.type === 'read' ? (kind.downgradeOf?.token ?? null) : null,
              request.ttlMs,
              join,
              this.channel,
              options.waiterLeaseMs,
            ],
          ];
    let sentAt = Date.now();
    const result = await statements.run(
      'acquire',
      request.key,
      (client) => {
        sentAt = Date.now();
        return statements.send<AttemptRow>(client, text, params);
      },
      // Given up on: leave, which removes a queue entry and passes on a grant this attempt got, so
      // no lease or entry is left for its whole lifetime. By its random token: always safe.
      () => this.leave(request, token),
      request.ttlMs,
    );
    const row = result.rows[0] ?? { held: false, fence: null, remaining_ms: null, sentAt };
    row.sentAt = sentAt;
    if (kind?.type === 'permit' && row.recorded_permits !== null && row.recorded_permits !== undefined) {
      throw new InvalidArgumentError(
        'permits',
        `the semaphore is in use with ${row.recorded_permits} permits, not ${kind.permits}; every client of one key must pass the same permits`,
        { key: request.key, backend: this.backend },
      );
    }
    return row;
  }

  async leave(request: AcquireRequest, token: string): Promise<void> {
    const text = request.kind === undefined ? this.sql.lock.leave : this.sql.kinds.leave;
    await this.context.statements.query('acquire', request.key, text, [request.key, token]);
  }

  async heartbeat(tokens: readonly QueuedToken[]): Promise<readonly HeartbeatAnswer[]> {
    const keys = tokens.map(({ request }) => request.key);
    const { rows } = await this.context.statements.query<{ token: string; queued: boolean; remaining_ms: number | null }>(
      'wait',
      tokens.length === 1 ? keys[0] : undefined,
      this.sql.lock.heartbeat,
      [tokens.map(({ token }) => token), keys, this.waiterLeaseMs],
    );
    const byToken = new Map(rows.map((row) => [row.token, row]));
    return tokens.map(({ token }) => {
      const row = byToken.get(token);
      // Entry gone (granted to us unheard, or purged) or the lock free: look now.
      return row === undefined || !row.queued || row.remaining_ms === null || row.remaining_ms <= 0
        ? 'recheck'
        : { held: false, holderRemainingMs: row.remaining_ms };
    });
  }

  listening(): true | Promise<void> {
    return this.context.listener.grantsReady();
  }

  subscribe(sink: GrantSink): void {
    this.context.listener.subscribeGrants({
      channel: this.channel,
      onGrant: (payload) => {
        const [token, fence] = payload.split(' ');
        if (token) sink.granted(token, Number(fence));
      },
      onBroken: () => sink.broken(),
    });
  }
}
