// Broken read-write locks and semaphores of the fair mode, each a one-line change to a real script
// on a real server: the readWrite and semaphore groups of the conformance suite must catch every
// one (as packages/conformance/test/mutants-primitives.test.ts does for the memory backend).
import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import {
  allPermitsAtOnce,
  crashedPermitReturns,
  crashedReader,
  downgrade,
  fifoAcrossModes,
  neverMoreThanPermits,
  noWriterStarvation,
  oneReleaseOneWaiter,
  permitFencesAfterIdle,
  permitRenewKeeps,
  queuedReadersTogether,
  readersShare,
  readFencesAfterIdle,
  readWriteChaos,
  runCase,
  semaphoreChaos,
  writersExclude,
  type ConformanceCase,
} from '@deadbolt/conformance';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBackend, fairCapabilities, type RedisBackend } from '../src/index.js';
import { kindAcquireLua, kindLeaveLua, kindReleaseLua, kindRenewLua } from '../src/lua/kinds.js';
import { redisResidue } from './residue.js';

type KindScript = 'kind_acquire' | 'kind_release' | 'kind_leave' | 'kind_renew';
const sources: Record<KindScript, string> = {
  kind_acquire: kindAcquireLua,
  kind_release: kindReleaseLua,
  kind_leave: kindLeaveLua,
  kind_renew: kindRenewLua,
};

/** Replaces `from` by `to` in a script; throws if the text is not there (a mutant must mutate). */
function mutate(script: KindScript, from: string, to: string): [KindScript, string] {
  const source = sources[script];
  if (!source.includes(from)) throw new Error(`mutant of ${script}: "${from}" not found`);
  return [script, source.split(from).join(to)];
}
/** The same change in every script that carries the text (the shared fragment). */
const everywhere = (from: string, to: string): [KindScript, string][] =>
  (Object.keys(sources) as KindScript[]).map((script) => mutate(script, from, to));

const permitRoom = "return redis.call('ZCARD', holdersKey) < tonumber(redis.call('HGET', metaKey, 'permits') or '1')";

const mutants: [string, ConformanceCase[], [KindScript, string][]][] = [
  [
    'a writer admitted beside readers',
    [readersShare, writersExclude],
    everywhere("return redis.call('EXISTS', holdersKey) == 0", "return redis.call('HEXISTS', metaKey, 'writer') == 0"),
  ],
  [
    'a solo hold (the uncontended fast path) unseen by the general path',
    [crashedReader],
    everywhere("local solo = redis.call('HGET', metaKey, 'solo')\n  if not solo then return end", 'do return end'),
  ],
  [
    "readers barge past a queued writer (Redisson's RReadWriteLock)",
    [noWriterStarvation, fifoAcrossModes],
    [
      mutate(
        'kind_acquire',
        "if redis.call('EXISTS', queueKey) == 0 and room(mode) then",
        "if (mode == 'r' or redis.call('EXISTS', queueKey) == 0) and room(mode) then",
      ),
    ],
  ],
  [
    'queued readers admitted one at a time',
    [queuedReadersTogether],
    everywhere('if not room(mode) then return end', "if not room(mode) or redis.call('EXISTS', holdersKey) == 1 then return end"),
  ],
  [
    'the downgrade read queues behind a waiting writer (CURATOR-276)',
    [downgrade],
    [mutate('kind_acquire', "if downgradeOf ~= '' and", 'if false and')],
  ],
  [
    "holds that never expire (Redisson's RSemaphore)",
    [crashedReader, crashedPermitReturns],
    everywhere("local ended = redis.call('ZRANGEBYSCORE', holdersKey, '-inf', now)", 'local ended = {}'),
  ],
  ['one permit too many', [allPermitsAtOnce, neverMoreThanPermits], everywhere(permitRoom, permitRoom.replace(' < ', ' <= '))],
  [
    'a release that wakes nobody',
    [oneReleaseOneWaiter],
    [
      mutate(
        'kind_release',
        "local ours = release(ARGV[1])\ngrantWaiting(ARGV[2] or 'deadbolt:grant:', ARGV[3] or 'PUBLISH')",
        'local ours = release(ARGV[1])',
      ),
    ],
  ],
  ['a release that admits two waiters', [oneReleaseOneWaiter], [mutate('kind_release', permitRoom, permitRoom.replace(' < ', ' <= '))]],
  [
    'an aborted waiter left in the queue (CURATOR-315/462)',
    [readWriteChaos, semaphoreChaos],
    [mutate('kind_leave', "redis.call('LREM', queueKey, 1, ARGV[1])\nredis.call('ZREM', waitersKey, ARGV[1])", '')],
  ],
  [
    'reads and permits take the last fence instead of a new one (only a writer counts)',
    [readFencesAfterIdle, permitFencesAfterIdle],
    everywhere(
      "local fence = redis.call('INCR', fenceKey)",
      "local fence = mode == 'w' and redis.call('INCR', fenceKey) or tonumber(redis.call('GET', fenceKey) or '0')",
    ),
  ],
  [
    'a renewal beside other holds that answers yes and leaves the lease end',
    [permitRenewKeeps],
    [mutate('kind_renew', "redis.call('ZADD', holdersKey, now + tonumber(ARGV[2]), ARGV[1])", '-- the lease end left where it was')],
  ],
];

/**
 * The mutants run with a 60 s waiter lease (heartbeat every 20 s, the first 10-20 s after the first
 * waiter queued), so a case sees what the hand-off paths do: with the suite's 3 s lease, a heartbeat
 * could mend a missing grant (or drop a stranded entry) inside the case's bounds, and the mutant
 * would pass by luck (a CI run saw "a release that wakes nobody" pass when the first beat could
 * fall anywhere in the period).
 */
const mutantWaiterLeaseMs = 60_000;

describe.concurrent('the readWrite and semaphore groups catch broken fair scripts', () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const [what, cases, changes] of mutants) {
    for (const testCase of cases) {
      it(`${what} fails "${testCase.title}"`, async () => {
        const backends = new WeakMap<LockClient, RedisBackend>();
        const connections: Redis[] = [];
        const options = {
          name: `mutant: ${what}`,
          capabilities: fairCapabilities,
          // The chaos cases begin with an abort of a queued waiter, so the mutant that strands such
          // an entry is caught whatever the random part does (200 random operations missed it in CI).
          chaosOperations: 40,
          residue: redisResidue,
          create: (_: unknown, { prefix }: { prefix: string }) => {
            // The user's connection: the backend defines the real scripts on it, the mutant overrides some.
            // No commandTimeout, so the backend bounds calls itself and cuts them short at close (a
            // release in flight at close used to fail there: see fair-kinds.test.ts).
            const connection = new Redis({ host: server.host, port: server.port, lazyConnect: true, maxRetriesPerRequest: 0 });
            connection.on('error', () => undefined);
            connections.push(connection);
            const backend = createRedisBackend({ mode: 'fair', client: connection, waiterLeaseMs: mutantWaiterLeaseMs });
            for (const [script, lua] of changes) connection.defineCommand(`deadbolt_${script}`, { numberOfKeys: 5, lua });
            const client = createLockClient({ backend, prefix });
            backends.set(client, backend);
            return client;
          },
          kill: async (client: LockClient) => backends.get(client)?.simulateCrash(),
        };
        try {
          const error = await runCase(testCase, options, server).then(
            () => undefined,
            (e: unknown) => e,
          );
          console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
          expect(error).toBeInstanceOf(Error);
        } finally {
          for (const connection of connections) connection.disconnect();
        }
      }, 60_000);
    }
  }
});
