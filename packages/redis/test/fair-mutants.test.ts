// Broken fair modes, each a one-line change to a real script on a real server: the fair group of
// the conformance suite must catch every one (as packages/conformance/test/mutants.test.ts does for
// the memory backend).
import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  crashedHolderReplaced,
  fencesAcrossHandOffs,
  fifoOrder,
  giveUpLeavesNothing,
  killedWaiterAtHead,
  lostGrantMessage,
  longWaiterKeepsPlace,
  noBarging,
  runCase,
  type ConformanceCase,
} from '@deadbolt/conformance';
import { createRedisBackend, fairCapabilities, type RedisBackend } from '../src/index.js';
import { fairAcquireLua, fairLeaveLua, fairReleaseLua } from '../src/lua/fair.js';
import { suiteWaiterLeaseMs } from './fair-hooks.js';

type FairScript = 'fair_acquire' | 'fair_release' | 'fair_leave';
const sources: Record<FairScript, string> = { fair_acquire: fairAcquireLua, fair_release: fairReleaseLua, fair_leave: fairLeaveLua };

/** Replaces `from` by `to` in a script; throws if the text is not there (a mutant must mutate). */
function mutate(script: FairScript, from: string, to: string): [FairScript, string] {
  const source = sources[script];
  if (!source.includes(from)) throw new Error(`mutant of ${script}: "${from}" not found`);
  return [script, source.split(from).join(to)];
}

const mutants: [string, ConformanceCase, [FairScript, string][]][] = [
  [
    'LIFO instead of FIFO',
    fifoOrder,
    [
      mutate('fair_acquire', "redis.call('LPOP', queueKey)", "redis.call('RPOP', queueKey)"),
      mutate('fair_release', "redis.call('LPOP', queueKey)", "redis.call('RPOP', queueKey)"),
    ],
  ],
  [
    'a free key is taken past the queue (barging)',
    noBarging,
    [mutate('fair_acquire', "if redis.call('EXISTS', queueKey) == 0 then", 'if true then')],
  ],
  [
    'the fast path takes a free key past the queue (barging)',
    noBarging,
    [mutate('fair_acquire', "redis.call('EXISTS', KEYS[3]) == 0 and ", '')],
  ],
  ['a waiter that gives up leaves its entry and its raced grant', giveUpLeavesNothing, [['fair_leave', 'return 1']]],
  [
    'a grant claims the waiter ttl, not its remaining waiter lease',
    killedWaiterAtHead,
    [mutate('fair_release', 'math.min(tonumber(ttl), deadline - now)', 'tonumber(ttl)')],
  ],
  ['a re-check does not recognise its own grant', lostGrantMessage, [mutate('fair_acquire', 'if holder == token then', 'if false then')]],
  [
    'an expired holder is never replaced without a release',
    crashedHolderReplaced,
    [mutate('fair_acquire', 'if not holder then', "if not holder and redis.call('EXISTS', queueKey) == 0 then")],
  ],
  [
    'a grant reuses the fence',
    fencesAcrossHandOffs,
    [mutate('fair_release', "local fence = redis.call('INCR', fenceKey)", "local fence = tonumber(redis.call('GET', fenceKey) or '0')")],
  ],
  [
    'a heartbeat that does not extend the waiter deadline (ZADD NX)',
    longWaiterKeepsPlace,
    [
      mutate(
        'fair_acquire',
        "redis.call('ZADD', waitersKey, now + lease, token)",
        "redis.call('ZADD', waitersKey, 'NX', now + lease, token)",
      ),
    ],
  ],
  [
    'a grant message prints the fence as Lua prints numbers (14 digits: a seeded fence has 16)',
    fencesAcrossHandOffs,
    [mutate('fair_release', "string.format('%d', fence)", 'fence')],
  ],
];

describe('the fair group catches broken fair modes', () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const [what, testCase, changes] of mutants) {
    it(`${what} fails "${testCase.title}"`, async () => {
      const backends = new WeakMap<LockClient, RedisBackend>();
      const connections: Redis[] = [];
      const options = {
        name: `mutant: ${what}`,
        capabilities: fairCapabilities,
        create: (_: unknown, { prefix }: { prefix: string }) => {
          // The user's connection: the backend defines the real scripts on it, the mutant overrides one.
          const connection = new Redis({ host: server.host, port: server.port, lazyConnect: true, maxRetriesPerRequest: 0 });
          connection.on('error', () => undefined);
          connections.push(connection);
          const backend = createRedisBackend({ mode: 'fair', client: connection, waiterLeaseMs: suiteWaiterLeaseMs });
          for (const [script, lua] of changes) connection.defineCommand(`deadbolt_${script}`, { numberOfKeys: 4, lua });
          const client = createLockClient({ backend, prefix });
          backends.set(client, backend);
          return client;
        },
        kill: async (client: LockClient) => backends.get(client)?.simulateCrash(),
        fair: {
          waiterLeaseMs: suiteWaiterLeaseMs,
          recheckBoundMs: Math.floor(suiteWaiterLeaseMs / 3),
          loseGrantMessages: (client: LockClient) => backends.get(client)?.simulateLostGrantMessages(),
        },
      };
      try {
        const error = await runCase(testCase, options).then(
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
