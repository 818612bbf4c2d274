import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterEach, describe, expect, it } from 'vitest';
import { env } from './pg-env.js';

const clients: LockClient[] = [];
function client(): LockClient {
  const created = createLockClient(`${env.server.url}?mode=lease`);
  clients.push(created);
  return created;
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((each) => each.close()));
});

/** Lease-mode elections: the leaders table beside the lease rows. */
export function leaseElectionCases(): void {
  describe('postgres:lease election', () => {
    it('the term is the lease row fence; deadbolt_locks_leaders names the leader only while its token holds a live lease', async () => {
      const election = client().elect('pg-sched', { id: 'node-a' });
      const first = await election[Symbol.asyncIterator]().next();
      expect(first.done).not.toBe(true);
      const { rows } = await env.admin.query<{ owner: string; fence: string; token: string; id: string }>(
        `SELECT l.owner, l.fence::text AS fence, n.token, n.id FROM deadbolt_locks l JOIN deadbolt_locks_leaders n ON n.key = l.key WHERE l.key = 'pg-sched'`,
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]!.token).toBe(rows[0]!.owner);
      expect(rows[0]!.id).toBe('node-a');
      expect(first.value!.term).toBe(Number(rows[0]!.fence));
      expect(await election.leader()).toBe('node-a');
      // The lease runs out on the server: the record names nobody, even before anyone takes over.
      await env.admin.query(`UPDATE deadbolt_locks SET expires_at = now() - interval '1 second' WHERE key = 'pg-sched'`);
      expect(await election.leader()).toBeNull();
      await election.resign();
    });

    it('with ?schema=, the leaders table lives in that schema beside the lease table', async () => {
      const scoped = createLockClient(`${env.server.url}?mode=lease&schema=deadbolt_elect`);
      clients.push(scoped);
      const election = scoped.elect('pg-scoped', { id: 'node-s' });
      await election[Symbol.asyncIterator]().next();
      expect(await election.leader()).toBe('node-s');
      const { rows } = await env.admin.query<{ id: string }>(
        `SELECT id FROM deadbolt_elect.deadbolt_locks_leaders WHERE key = 'pg-scoped'`,
      );
      expect(rows.map((row) => row.id)).toEqual(['node-s']);
      await election.resign();
    });
  });
}
