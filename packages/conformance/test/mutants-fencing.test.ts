// Test-only broken backends and clients for the fencing group: each case must catch its mutant.
import { createLockClient, type LockClient, type LockEvents } from '@deadbolt/core';
import {
  MemoryBackend,
  memoryCapabilities,
  memoryStore,
  type AcquireRequest,
  type AttemptResult,
  type Grant,
} from '@deadbolt/core/adapter';
import { describe, expect, it } from 'vitest';
import {
  fencingExpiringBeforeLost,
  fencingValidateAfterExpiry,
  fencingValidateHeld,
  fencingValidateMulti,
  fencingValidateStale,
  fencingValidateTerm,
  runCase,
  type ConformanceCase,
  type ConformanceOptions,
  type ServerLike,
} from '../src/index.js';
import type { Mutant } from './memory-mutants.js';

/** Answers from the client's own record: every grant it handed out and has not released holds. */
class ValidateFromMemory extends MemoryBackend {
  private readonly handedOut = new Set<string>();
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const result = await super.tryAcquire(request);
    if (result.acquired) this.handedOut.add(result.grant.token);
    return result;
  }
  override async campaign(...args: Parameters<MemoryBackend['campaign']>): ReturnType<MemoryBackend['campaign']> {
    const grant = await super.campaign(...args);
    if (grant) this.handedOut.add(grant.token);
    return grant;
  }
  override async tryAcquireMany(requests: readonly AcquireRequest[]): ReturnType<MemoryBackend['tryAcquireMany']> {
    const result = await super.tryAcquireMany(requests);
    if (result.acquired) for (const grant of result.grants) this.handedOut.add(grant.token);
    return result;
  }
  override async release(grant: Grant): Promise<boolean> {
    this.handedOut.delete(grant.token);
    return super.release(grant);
  }
  override async validate(grant: Grant): Promise<boolean> {
    return this.handedOut.has(grant.token);
  }
}

/** Compares the key only: any live hold of the key validates, whoever it belongs to. */
class ValidateKeyNotToken extends MemoryBackend {
  override async validate(grant: Grant): Promise<boolean> {
    return this.store.live(grant.key, Date.now()) !== undefined;
  }
}

/** Reads the key without the client's prefix (a wrong key name): never finds the hold. */
class ValidateWrongKey extends MemoryBackend {
  override async validate(grant: Grant): Promise<boolean> {
    return super.validate({ ...grant, key: grant.key.slice(grant.key.indexOf(':') + 1) });
  }
}

/** A multi-lock's batch looks at its first key only. */
class ValidateManyFirstOnly extends MemoryBackend {
  override async validateMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    const first = await this.validate(grants[0]!);
    return grants.map(() => first);
  }
}

/** The server never ends a lease: an expired holder's key is never free for the next owner. */
class EternalLease extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const result = await super.tryAcquire(request);
    const entry = result.acquired ? this.store.live(request.key, Date.now()) : undefined;
    if (entry) entry.expiresAt = Number.POSITIVE_INFINITY;
    return result;
  }
}

const mutants: [string, Mutant, ConformanceCase][] = [
  ['a validate that reads the key without the prefix', ValidateWrongKey, fencingValidateHeld],
  ['a lease the server never ends', EternalLease, fencingValidateAfterExpiry],
  ['a validate that answers from the client\u2019s memory', ValidateFromMemory, fencingValidateStale],
  ['a validate that compares the key but not the token', ValidateKeyNotToken, fencingValidateStale],
  ['a validateMany that looks at the first key only', ValidateManyFirstOnly, fencingValidateMulti],
  ['a validate that answers from the client\u2019s memory', ValidateFromMemory, fencingValidateTerm],
];

function memoryOptions(what: string, Backend: Mutant, testCase: ConformanceCase): ConformanceOptions {
  const store = memoryStore(`mutant-${what}-${testCase.title}`);
  return {
    name: `mutant: ${what}`,
    capabilities: memoryCapabilities,
    create: (_, { prefix }) => createLockClient({ backend: new Backend(store, 'memory-mutant'), prefix }),
    expireHold: async (_, fullKey) => store.delete(fullKey),
  };
}

async function failure<S extends ServerLike>(testCase: ConformanceCase, options: ConformanceOptions<S>, server?: S): Promise<unknown> {
  return runCase(testCase, options, server).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('the fencing group catches broken validate()', () => {
  for (const [what, Backend, testCase] of mutants) {
    it(`${what} fails "${testCase.title}"`, async () => {
      const error = await failure(testCase, memoryOptions(what, Backend, testCase));
      console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
      expect(error).toBeInstanceOf(Error);
    });
  }
});

/** A stand-in server whose pause holds every call of its backends until resume (a SIGSTOPped process). */
class PausableServer implements ServerLike {
  private paused: (() => void)[] | undefined;
  async pause(): Promise<void> {
    this.paused ??= [];
  }
  async resume(): Promise<void> {
    const waiting = this.paused ?? [];
    this.paused = undefined;
    for (const wake of waiting) wake();
  }
  gate(): Promise<void> {
    return this.paused === undefined ? Promise.resolve() : new Promise((resolve) => this.paused!.push(resolve));
  }
  async stop(): Promise<void> {
    await this.resume();
  }
}

function pausable(server: PausableServer, store: ReturnType<typeof memoryStore>): MemoryBackend {
  return new (class extends MemoryBackend {
    override async renew(grant: Grant, ttlMs: number): Promise<boolean> {
      await server.gate();
      return super.renew(grant, ttlMs);
    }
    override async release(grant: Grant): Promise<boolean> {
      await server.gate();
      return super.release(grant);
    }
  })(store, 'memory-pausable');
}

/** The client with its `on` replaced; every other member is the client's own. */
function withOn(client: LockClient, on: LockClient['on']): LockClient {
  return new Proxy(client, {
    get(target, property) {
      if (property === 'on') return on;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** 'expiring' listeners are never called. */
function neverExpiring(client: LockClient): LockClient {
  const on = withOn(client, ((event, listener) => (event === 'expiring' ? client : client.on(event, listener))) as LockClient['on']);
  return on;
}

/** 'expiring' reaches its listeners only after the lock's 'lost'. */
function expiringAfterLost(client: LockClient): LockClient {
  return withOn(client, ((event, listener) => {
    if (event !== 'expiring') return client.on(event, listener);
    const held: LockEvents['expiring'][0][] = [];
    const deliver = listener as (payload: LockEvents['expiring'][0]) => void;
    client.on('expiring', (payload) => held.push(payload));
    client.on('lost', () => setImmediate(() => held.splice(0).forEach(deliver)));
    return client;
  }) as LockClient['on']);
}

function pausedOptions(what: string, wrap: (client: LockClient) => LockClient): ConformanceOptions<PausableServer> {
  const store = memoryStore(`mutant-${what}`);
  return {
    name: `mutant: ${what}`,
    capabilities: memoryCapabilities,
    servers: async () => new PausableServer(),
    faults: { pause: (server) => server.pause(), resume: (server) => server.resume() },
    create: (server, { prefix }) => wrap(createLockClient({ backend: pausable(server!, store), prefix })),
  };
}

describe("the fencing group catches a late or missing 'expiring'", () => {
  it('the unbroken client on a pausable memory server passes (the control)', async () => {
    const options = pausedOptions('control', (client) => client);
    const server = new PausableServer();
    expect(await failure(fencingExpiringBeforeLost, options, server)).toBeUndefined();
  });

  for (const [what, wrap] of [
    ["an 'expiring' never emitted", neverExpiring],
    ["an 'expiring' emitted after 'lost'", expiringAfterLost],
  ] as const) {
    it(`${what} fails "${fencingExpiringBeforeLost.title}"`, async () => {
      const server = new PausableServer();
      const error = await failure(fencingExpiringBeforeLost, pausedOptions(what, wrap), server);
      console.info(`[mutant] ${what}: caught by "${fencingExpiringBeforeLost.title}": ${String(error)}`);
      expect(error).toBeInstanceOf(Error);
    });
  }
});
