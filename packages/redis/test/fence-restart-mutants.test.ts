// The restart case must fail when a script hands out fences from a plain INCR again (no seed from the
// server's clock when the counter is new): one mutant per script family the case covers.
import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBackend, type RedisMode } from '../src/index.js';
import { kindAcquireLua } from '../src/lua/kinds.js';
import { setnxAcquireLua } from '../src/lua/mutex.js';
import { electAcquireLua } from '../src/lua/multi-election.js';
import { type FenceClients, fencesAcrossRestart, type TakeFence, takeMutex, takePermit, takeTerm } from './fence-restart.js';

/** The seed taken out: a new counter starts at 1 again, as INCR alone does. */
function unseeded(lua: string): string {
  if (!lua.includes('== 1 then')) throw new Error('mutant: the seed is not in the script');
  return lua.replace(/if (fence|term) == 1 then/g, 'if false then');
}

interface Mutant {
  readonly what: string;
  readonly mode: RedisMode;
  readonly take: TakeFence;
  readonly command: string;
  readonly keys: number;
  readonly lua: string;
}

const mutants: Mutant[] = [
  { what: 'setnx acquire', mode: 'setnx', take: takeMutex, command: 'deadbolt_setnx_acquire', keys: 2, lua: setnxAcquireLua },
  { what: 'fair semaphore acquire', mode: 'fair', take: takePermit, command: 'deadbolt_kind_acquire', keys: 5, lua: kindAcquireLua },
  { what: 'setnx election', mode: 'setnx', take: takeTerm, command: 'deadbolt_elect_acquire', keys: 3, lua: electAcquireLua },
];

function mutated(mutant: Mutant): FenceClients {
  const connections: Redis[] = [];
  return {
    async open(server) {
      const connection = new Redis({ host: server.host, port: server.port, lazyConnect: true, maxRetriesPerRequest: 0 });
      connection.on('error', () => undefined);
      connections.push(connection);
      const backend = createRedisBackend({ mode: mutant.mode, client: connection });
      connection.defineCommand(mutant.command, { numberOfKeys: mutant.keys, lua: unseeded(mutant.lua) });
      return createLockClient({ backend });
    },
    async closeAll() {
      for (const connection of connections.splice(0)) connection.disconnect();
    },
  };
}

describe('the restart case catches fences that start over', () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const mutant of mutants) {
    it(`unseeded ${mutant.what}`, async () => {
      const { before, after } = await fencesAcrossRestart(server, mutated(mutant), mutant.take, `mutant:${mutant.what}`);
      console.info(`[mutant] unseeded ${mutant.what}: ${before} before the restart, ${after} after`);
      expect(after).toBeLessThanOrEqual(before);
    }, 30_000);
  }
});
