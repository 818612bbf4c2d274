// Broken multi-locks and elections of the fair mode, each a one-line change to a real script on a
// real server: the multi and election groups of the conformance suite must catch every one.
import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { electionOneLeader, multiExcludesSingle, runCase, type ConformanceCase } from '@deadbolt/conformance';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBackend, fairCapabilities, type RedisBackend } from '../src/index.js';
import { fairEnqueueManyLua, fairReleaseLua } from '../src/lua/fair.js';

/** A mutated script: the ioredis command it replaces, its key count (undefined: variable), its source. */
interface Change {
  readonly command: string;
  readonly keys?: number;
  readonly lua: string;
}

function mutate(source: string, from: string, to: string): string {
  if (!source.includes(from)) throw new Error(`mutant: "${from}" not found`);
  return source.split(from).join(to);
}

const mutants: [string, ConformanceCase, Change][] = [
  [
    'a multi-lock counts a busy key as taken (not all or nothing)',
    multiExcludesSingle,
    {
      command: 'deadbolt_fair_enqueue_many',
      lua: mutate(
        fairEnqueueManyLua,
        "reply[2 * i - 1], reply[2 * i] = 0, redis.call('PTTL', lockKey)",
        'reply[2 * i - 1], reply[2 * i] = 1, 0',
      ),
    },
  ],
  [
    'a hand-off reuses the fence: a new leader gets the old term',
    electionOneLeader,
    {
      command: 'deadbolt_fair_release',
      keys: 4,
      lua: mutate(
        fairReleaseLua,
        "local fence = redis.call('INCR', fenceKey)",
        "local fence = tonumber(redis.call('GET', fenceKey) or '0')",
      ),
    },
  ],
];

/** A 30 s waiter lease (heartbeat every 10 s): only the hand-off paths can meet the cases' bounds, as in fair-kinds-mutants. */
const mutantWaiterLeaseMs = 30_000;

describe.concurrent('the multi and election groups catch broken fair scripts', () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const [what, testCase, change] of mutants) {
    it(`${what} fails "${testCase.title}"`, async () => {
      const backends = new WeakMap<LockClient, RedisBackend>();
      const connections: Redis[] = [];
      const options = {
        name: `mutant: ${what}`,
        capabilities: fairCapabilities,
        create: (_: unknown, { prefix }: { prefix: string }) => {
          const connection = new Redis({ host: server.host, port: server.port, lazyConnect: true, maxRetriesPerRequest: 0 });
          connection.on('error', () => undefined);
          connections.push(connection);
          const backend = createRedisBackend({ mode: 'fair', client: connection, waiterLeaseMs: mutantWaiterLeaseMs });
          connection.defineCommand(
            change.command,
            change.keys === undefined ? { lua: change.lua } : { numberOfKeys: change.keys, lua: change.lua },
          );
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
});
