import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresBackend } from '../src/index.js';

/** election.observe() gives the leader's term on both modes (leaderInfo), not just its id. */
let server: PostgresServerHandle;
const clients: LockClient[] = [];
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server?.stop();
});

describe.each(['advisory', 'lease'])('postgres:%s election.observe()', (mode) => {
  it('names the leader with its term, and null/null once it resigned', async () => {
    const client = (): LockClient => {
      const made = createLockClient({ backend: createPostgresBackend(`${server.url}?mode=${mode}`) });
      clients.push(made);
      return made;
    };
    const [candidate, watcher] = [client(), client()];
    const election = candidate.elect(`observed-${mode}`, { id: 'a' });
    const term = await election[Symbol.asyncIterator]().next();
    expect(term.done).toBe(false);
    const stop = new AbortController();
    const changes = watcher
      .elect(`observed-${mode}`, { id: 'watcher' })
      .observe({ signal: stop.signal, intervalMs: 20 })
      [Symbol.asyncIterator]();
    try {
      const first = await changes.next();
      expect(first.value).toEqual({ leader: 'a', term: term.done ? undefined : term.value.term });
      await election.resign();
      const second = await changes.next();
      expect(second.value).toEqual({ leader: null, term: null });
    } finally {
      stop.abort();
      await changes.return?.();
    }
  });
});
