// The election outage case on a memory server that goes down and comes back: it passes with core's
// election (a candidacy outlives the outage), and fails with a core election that ends the
// candidacy on the first transient error (what every backend did before: the loop rejected).
import { createLockClient, type Election, type LockClient, type Term } from '@deadbolt/core';
import { memoryCapabilities, memoryStore } from '@deadbolt/core/adapter';
import { describe, expect, it } from 'vitest';
import { electionSurvivesRestart, runCase, type ConformanceOptions } from '../src/index.js';
import { OutageServer, outageBackend } from './outage-memory.js';

/** A client whose elections end (reject) at the first transient error the client reports for their key. */
function endsOnOutage(client: LockClient): LockClient {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'elect') return Reflect.get(target, property, receiver) as unknown;
      return (name: string, options: Parameters<LockClient['elect']>[1]) => rethrowing(target, target.elect(name, options));
    },
  });
}

function rethrowing(client: LockClient, election: Election): Election {
  let failure: Error | undefined;
  let fail: (error: Error) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => {
    fail = reject;
  });
  failed.catch(() => undefined);
  client.on('error', ({ key, error }) => {
    if (key !== election.name || failure) return;
    failure = error;
    fail(error);
  });
  return {
    name: election.name,
    id: election.id,
    leader: () => election.leader(),
    observe: (options) => election.observe(options),
    resign: () => election.resign(),
    [Symbol.asyncDispose]: () => election.resign(),
    [Symbol.asyncIterator](): AsyncIterator<Term> {
      const inner = election[Symbol.asyncIterator]();
      return {
        next: () => (failure ? Promise.reject(failure) : Promise.race([inner.next(), failed])),
        return: async () => {
          await election.resign();
          return { done: true, value: undefined };
        },
      };
    },
  };
}

function options(
  what: string,
  wrap: (client: LockClient) => LockClient,
): { options: ConformanceOptions<OutageServer>; server: OutageServer } {
  const server = new OutageServer();
  const store = memoryStore(`election-outage-${what}-${Math.random()}`);
  const Backend = outageBackend(server);
  return {
    server,
    options: {
      name: `outage: ${what}`,
      capabilities: memoryCapabilities,
      create: (_, { prefix }) => wrap(createLockClient({ backend: new Backend(store, 'memory-outage'), prefix })),
      faults: server.faults(),
    },
  };
}

describe('the election outage case', () => {
  it(`passes on a memory server that goes down and comes back: "${electionSurvivesRestart.title}"`, async () => {
    const { options: unbroken, server } = options('unbroken', (client) => client);
    await runCase(electionSurvivesRestart, unbroken, server);
  }, 60_000);

  it(`a core election that rethrows transient errors fails "${electionSurvivesRestart.title}"`, async () => {
    const { options: mutant, server } = options('rethrows', endsOnOutage);
    const error = await runCase(electionSurvivesRestart, mutant, server).then(
      () => undefined,
      (e: unknown) => e,
    );
    console.info(`[mutant] a core election that rethrows transient errors: ${String(error)}`);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).toMatch(/an outage must not end a candidacy|rejected/);
  }, 60_000);
});
