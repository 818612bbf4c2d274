import { electionOneLeader, electionTermsIncrease, runCase, type ConformanceCase } from '@deadbolt/conformance';
import { createLockClient, type LockClient } from '@deadbolt/core';
import type { CampaignRequest, Grant } from '@deadbolt/core/adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { env } from './pg-env.js';
import { advisoryCapabilities, createPostgresBackend, type PostgresBackend } from '../src/index.js';
import type { advisoryElectionSql } from '../src/modes/advisory/election.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function client(): LockClient {
  const created = createLockClient(`${env.server.url}?mode=advisory`);
  closers.push(() => created.close());
  return created;
}
function backend(): PostgresBackend {
  const created = createPostgresBackend(`${env.server.url}?mode=advisory`) as PostgresBackend;
  closers.push(() => created.close());
  return created;
}

/** Advisory elections: the leaders row, the idle-session lease, and SQL mutants the election cases catch. */
export function advisoryElectionCases(): void {
  describe('postgres:advisory election', () => {
    it('the term is the advisory fence; the leaders row names the leader only while its session holds the lock', async () => {
      const election = client().elect('adv-sched', { id: 'node-a' });
      const first = await election[Symbol.asyncIterator]().next();
      expect(first.done).not.toBe(true);
      const { rows } = await env.admin.query<{ id: string; pid: number; term: string }>(
        `SELECT id, pid, term::text AS term FROM deadbolt_fences_leaders WHERE key = 'adv-sched'`,
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]!.id).toBe('node-a');
      expect(first.value!.term).toBe(Number(rows[0]!.term));
      expect(await election.leader()).toBe('node-a');
      // The server ends the leader's session: the term is lost at once and the row names nobody.
      await env.admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await expect.poll(() => first.value!.signal.aborted, { timeout: 5_000 }).toBe(true);
      await expect.poll(() => election.leader(), { timeout: 5_000 }).toBeNull();
      await election.resign();
    });

    it('two applications (namespaces) elect under one name side by side; leader() names each its own', async () => {
      const inNamespace = (namespace: string): LockClient => {
        const b = createPostgresBackend({ connectionString: env.server.url, mode: 'advisory', namespace });
        const created = createLockClient({ backend: b, prefix: '' });
        closers.push(() => created.close());
        return created;
      };
      const [appA, appB] = [
        inNamespace('app-a').elect('shared-name', { id: 'a1' }),
        inNamespace('app-b').elect('shared-name', { id: 'b1' }),
      ];
      const [termA, termB] = await Promise.all([appA[Symbol.asyncIterator]().next(), appB[Symbol.asyncIterator]().next()]);
      expect(termA.done).not.toBe(true);
      expect(termB.done).not.toBe(true);
      expect(await appA.leader()).toBe('a1');
      expect(await appB.leader()).toBe('b1');
      await Promise.all([appA.resign(), appB.resign()]);
    });

    it('a leader that stops pinging has its session ended by the server after ttl (idle_session_timeout), after its own deadline', async () => {
      const [a, b] = [backend(), backend()];
      let lostAt = 0;
      const request = (candidate: string, onLost: CampaignRequest['onLost'] = () => undefined): CampaignRequest => ({
        key: 'adv-idle',
        owner: candidate,
        candidate,
        ttlMs: 400,
        onLost,
      });
      const first = await a.election!.campaign(
        request('a', () => (lostAt = Date.now())),
        Date.now() + 5_000,
        new AbortController().signal,
      );
      expect(first).toBeDefined();
      // Nobody renews a's term: b waits in the server's queue and is granted when the server ends a's session.
      const second = await b.election!.campaign(request('b'), Date.now() + 5_000, new AbortController().signal);
      expect(second).toBeDefined();
      const grantedAt = Date.now();
      expect(second!.fence!).toBeGreaterThan(first!.fence!);
      expect((first as Grant).validUntil!).toBeLessThan(grantedAt);
      await expect.poll(() => lostAt, { timeout: 5_000 }).toBeGreaterThan(0);
      expect(await b.election!.leader('adv-idle')).toBe('b');
      expect(await b.election!.release(second!)).toBe(true);
      expect(await b.election!.leader('adv-idle')).toBeUndefined();
    });

    it('a follower whose process stalls when its wait is granted keeps the term (its session is not ended idle before it confirms)', async () => {
      const [a, b] = [backend(), backend()];
      const request = (candidate: string, onContended?: () => void): CampaignRequest => ({
        key: 'adv-stall',
        owner: candidate,
        candidate,
        ttlMs: 400,
        onLost: () => undefined,
        onContended,
      });
      const first = await a.election!.campaign(request('a'), Date.now() + 5_000, new AbortController().signal);
      expect(first).toBeDefined();
      // b's waiting statement goes out right after onContended; the stall then blocks this process
      // past a's end (400 ms idle), b's grant and 400 ms more, as a loaded CI machine did once.
      const stall = (): void => {
        setImmediate(() => {
          const until = Date.now() + 1_500;
          while (Date.now() < until);
        });
      };
      const second = await b.election!.campaign(request('b', stall), Date.now() + 5_000, new AbortController().signal);
      expect(second).toBeDefined();
      expect(second!.fence!).toBeGreaterThan(first!.fence!);
      expect(await b.election!.leader('adv-stall')).toBe('b');
      expect(await b.election!.release(second!)).toBe(true);
    });
  });

  type Sql = ReturnType<typeof advisoryElectionSql>;
  /** The advisory mode's election behind the backend (the mode table builds it; tests reach in). */
  function electionOf(b: PostgresBackend): { sql: Sql } {
    const election = (b as unknown as { mode?: { election?: { sql: Sql } } }).mode?.election;
    if (election?.sql === undefined) throw new Error("the test cannot find the advisory mode's election statements");
    return election;
  }

  /** An election case against advisory backends whose election SQL was broken on purpose. */
  async function mutantCase(testCase: ConformanceCase, breakSql: (sql: Sql) => Sql) {
    expect(electionOf(backend()).sql.leader).toContain('pg_locks');
    const error = await runCase(testCase, {
      name: 'postgres:advisory election mutant',
      capabilities: advisoryCapabilities,
      create: (_server, { prefix }) => {
        const b = backend();
        const election = electionOf(b);
        election.sql = breakSql(election.sql);
        return createLockClient({ backend: b, prefix });
      },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    // Caught by the case's own assertion, not by a broken test harness.
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(TypeError);
    expect((error as Error).cause).not.toBeInstanceOf(TypeError);
    return error;
  }

  describe('the election cases catch broken advisory SQL', () => {
    it('a campaign that takes no lock fails "at most one leader"', async () => {
      const error = await mutantCase(electionOneLeader, (sql) => ({
        ...sql,
        campaign: (...args) =>
          sql
            .campaign(...args)
            .replace(/pg_try_advisory_lock\([^)]*\)/, 'true')
            .replace(/SELECT pg_advisory_lock\([^)]*\)/, 'SELECT 1'),
      }));
      console.info(`[mutant] campaign without the lock: ${String(error)}`);
    });

    it('a term not drawn from the sequence after the grant fails "terms strictly increase"', async () => {
      const error = await mutantCase(electionTermsIncrease, (sql) => ({
        ...sql,
        campaign: (...args) => sql.campaign(...args).replaceAll(/nextval\('[^']*'\)/g, '1'),
      }));
      console.info(`[mutant] constant term: ${String(error)}`);
    });
  });
}
