import {
  BackendUnavailableError,
  closedError,
  InvalidArgumentError,
  onAbort,
  type AcquireRequest,
  type Grant,
} from '@deadbolt/core/adapter';
import { advisoryLockId } from '../../key-hash.js';
import { schemaOnce } from '../../schema-once.js';
import { advisoryPermitsSql, checkPermits } from './permits.js';
import { AdvisoryReadWrite, type Connection } from './read-write.js';

/**
 * Counting semaphores in advisory mode: `permits` slot locks behind a FIFO gate, Curator's
 * InterProcessSemaphoreV2 design mapped onto PostgreSQL's lock queue. The gate is an exclusive
 * advisory lock on (key, "gate"): acquirers queue for it in arrival order in the server, and only
 * the one inside looks for a slot, trying the slot locks (key, "slot", i) one by one with
 * pg_try_advisory_lock and stopping at the first it gets (one statement per slot: the PostgreSQL
 * docs warn that a LIMIT over pg_try_advisory_lock may lock more rows than it returns). With
 * every slot taken it polls the slots, still inside the gate, so one freed slot goes to exactly
 * one waiter, the first in line. The slot is held on a session of its own, which ends with the
 * permit: a crashed holder's session, and with it its slot, is freed by the server at once.
 * Inside the gate the acquirer also checks the semaphore's recorded `permits` (permits.ts).
 */
const pollMs = { first: 5, max: 100 } as const;
const maxTimeoutMs = 2 ** 31 - 1 - 60_000;

export class AdvisorySemaphore extends AdvisoryReadWrite {
  /** The permits statements (the package's mutant tests swap in broken ones). */
  permitsSql = advisoryPermitsSql(this.server.names);
  private readonly ensurePermitsTable = schemaOnce(async (connection: Connection) => {
    for (const statement of this.permitsSql.schema) await connection.client.query(statement);
  });

  async acquirePermit(
    request: AcquireRequest,
    permits: number,
    wait: boolean,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<Grant | undefined> {
    if (this.closed) throw closedError('acquire', request.key, this.backendName);
    const idOf = (name: string): string => advisoryLockId(`${request.key}\u0000${name}`, this.server.options.namespace).toString();
    const gate = idOf('gate');
    const inUse = idOf('in use');
    const connection = await this.connect(request.key);
    // A cancel is the session's end: it leaves the gate, or its queue, with it.
    const cancel = (): void => void connection.end(100);
    const detach = signal === undefined || signal.aborted ? undefined : onAbort(signal, cancel);
    if (signal?.aborted) cancel();
    try {
      if (!(await this.enterGate(connection, gate, wait, deadline))) {
        this.park(connection); // the gate was busy and nothing was taken
        return undefined;
      }
      await this.ensurePermitsTable(connection);
      await checkPermits(connection.client, this.permitsSql, { key: request.key, gate, inUse, permits, backend: this.backendName });
      for (let attempt = 0; ; attempt += 1) {
        // Slot ids one at a time, as tried: a scan stops at the first free slot, so it costs what is
        // held, never what `permits` allows (a list of every id ran the heap out at 1e9 permits).
        for (let index = 0; index < permits; index += 1) {
          const slot = idOf(`slot:${index}`);
          const result = await connection.client.query<{ counter: string | null }>(
            `SELECT CASE WHEN pg_try_advisory_lock($1::bigint) THEN nextval('${this.server.names.sequence}')::text END AS counter`,
            [slot],
          );
          const counter = result.rows[0]?.counter;
          if (counter !== null && counter !== undefined) {
            const left = await connection.client.query<{ ok: boolean }>(this.permitsSql.leaveGate, [inUse, gate]);
            // A session still in the gate must never be reused: fail (the catch ends the session).
            if (left.rows[0]?.ok !== true) throw new Error('the gate lock was not held at its unlock');
            if (signal?.aborted) {
              this.dropIfIdle(connection);
              return undefined;
            }
            return this.adopt(request, 'permit', slot, connection, counter, { text: this.permitsSql.release, values: [gate, slot, inUse] });
          }
        }
        if (attempt === 0) request.onContended?.();
        const remainingMs = deadline - Date.now();
        if (signal?.aborted) {
          this.dropIfIdle(connection); // ending the session leaves the gate too
          return undefined;
        }
        if (!wait || remainingMs <= 0) {
          await this.leaveGateEmpty(connection, gate);
          return undefined;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(remainingMs, pollMs.max, pollMs.first * 2 ** Math.min(attempt, 5))));
      }
    } catch (error) {
      if (error instanceof InvalidArgumentError) {
        await this.leaveGateEmpty(connection, gate); // refused inside the gate, before any slot
        throw error;
      }
      this.dropIfIdle(connection); // ending the session leaves the gate too
      if ((error as { code?: unknown } | null)?.code === '55P03' || signal?.aborted) return undefined;
      throw new BackendUnavailableError('acquire', { key: request.key, backend: this.backendName, cause: error });
    } finally {
      detach?.();
    }
  }

  /**
   * Out of the gate, holding nothing, before the caller hears the outcome: a session merely ended
   * keeps the gate until its server process has exited, and an acquirer trying the gate meanwhile
   * (the caller's next tryAcquire, or a release clearing the record) finds it busy. The session is
   * clean once the unlock is confirmed, so it is kept; on any doubt it is ended.
   */
  private async leaveGateEmpty(connection: Connection, gate: string): Promise<void> {
    try {
      const left = await connection.client.query<{ ok: boolean }>('SELECT pg_advisory_unlock($1::bigint) AS ok', [gate]);
      if (left.rows[0]?.ok === true) return this.park(connection);
    } catch {
      // Unknown state: ended below.
    }
    this.dropIfIdle(connection);
  }

  /** The gate: tried once (tryAcquire), or waited for in the server's queue until the deadline. */
  private async enterGate(connection: Connection, gate: string, wait: boolean, deadline: number): Promise<boolean> {
    if (!wait) {
      const result = await connection.client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [gate]);
      return result.rows[0]?.ok === true;
    }
    const waitMs = Math.min(maxTimeoutMs, Math.max(1, deadline - Date.now()));
    // Integers we computed (no user text): safe to inline, as SET takes no parameters.
    await connection.client.query(
      `SET LOCAL statement_timeout = ${waitMs + this.server.options.statementTimeoutMs}; SET LOCAL lock_timeout = ${waitMs}; SELECT pg_advisory_lock(${gate}::bigint)`,
    );
    return true;
  }
}
