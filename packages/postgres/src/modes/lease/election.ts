import type { CampaignRequest, TermGrant } from '@deadbolt/core/adapter';
import { schemaOnce } from '../../schema-once.js';
import { randomToken } from '../../token.js';

/**
 * Leader election on the lease mode (primitives.md §4.2, ShedLock's row-lease idea): a term is the
 * lease row of the election's key, taken by the lease mode's own conditional upsert, so it is
 * renewed, released and declared lost exactly as a lock (server-clock expiry; core declares the
 * loss at its local deadline, before the row can be taken over). The term is the row's fence (a
 * sequence: strictly increasing). In the SAME statement, a data-modifying CTE writes the leader's id
 * into `<table>_leaders` next to the lease's token; `leader()` joins the two, so the record names the
 * leader only while its token holds a live lease. Followers wait for the release NOTIFY.
 */
export function electionSql(table: string, schema?: string) {
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  const t = `${qualifier}"${table}"`;
  const seq = `${qualifier}"${table.slice(0, 56)}_fence"`;
  const leaders = `${qualifier}"${table.slice(0, 55)}_leaders"`;
  return {
    schema: `CREATE TABLE IF NOT EXISTS ${leaders} (key text PRIMARY KEY, token text NOT NULL, id text NOT NULL)`,
    campaign: `WITH taken AS (
        INSERT INTO ${t} AS l (key, owner, fence, expires_at)
        VALUES ($1, $2, nextval('${seq}'), now() + $3 * interval '1 millisecond')
        ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, fence = EXCLUDED.fence, expires_at = EXCLUDED.expires_at
        WHERE l.expires_at < now()
        RETURNING key, owner, fence),
      named AS (
        INSERT INTO ${leaders} (key, token, id) SELECT key, owner, $4 FROM taken
        ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, id = EXCLUDED.id
        RETURNING key)
      SELECT (SELECT fence FROM taken)::text AS fence, (SELECT count(*) FROM named)::int AS named,
             (SELECT ceil(extract(epoch FROM expires_at - now()) * 1000) FROM ${t} WHERE key = $1)::float8 AS remaining_ms`,
    leader: `SELECT n.id FROM ${leaders} n JOIN ${t} l ON l.key = n.key AND l.owner = n.token AND l.expires_at >= now() WHERE n.key = $1`,
  };
}

/** What the election needs of the lease backend: its guarded queries and its release wait. */
export interface LeaseElectionPort {
  readonly sql: ReturnType<typeof electionSql>;
  query<R extends Record<string, unknown>>(action: string, key: string, text: string, params: readonly unknown[]): Promise<readonly R[]>;
  waitForChange(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void>;
}

/** A notification can be missed (a reconnecting listener): never trust one for longer than this. */
const fallbackMs = 2_000;

export class LeaseElection {
  private readonly ensureSchema: (key: string) => Promise<void>;

  constructor(private readonly port: LeaseElectionPort) {
    this.ensureSchema = schemaOnce((key: string) => this.port.query('elect', key, this.port.sql.schema, []));
  }

  async campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    await this.ensureSchema(request.key);
    for (;;) {
      const token = randomToken();
      const sentAt = Date.now();
      const [row] = await this.port.query<{ fence: string | null; remaining_ms: number | null }>(
        'elect',
        request.key,
        this.port.sql.campaign,
        [request.key, token, request.ttlMs, request.candidate],
      );
      if (row?.fence !== null && row?.fence !== undefined)
        return { key: request.key, owner: request.owner, token, fence: Number(row.fence), sentAt };
      request.onContended?.();
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0 || signal.aborted) return undefined;
      const hintMs = row?.remaining_ms === null || row?.remaining_ms === undefined ? fallbackMs : Math.max(0, row.remaining_ms) + 1;
      const woken = await this.port.waitForChange(request.key, Math.max(1, Math.min(remainingMs, hintMs, fallbackMs)), signal).then(
        () => true,
        () => false,
      );
      if (!woken) return undefined;
    }
  }

  async leader(key: string): Promise<string | undefined> {
    await this.ensureSchema(key);
    const [row] = await this.port.query<{ id: string }>('leader', key, this.port.sql.leader, [key]);
    return row?.id;
  }
}
