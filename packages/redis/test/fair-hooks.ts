import { createLockClient, type LockClient } from '@deadbolt/core';
import { createRedisBackend, type RedisBackend, type RedisBackendOptions } from '../src/index.js';

/** The waiter lease the fair suite runs with: heartbeat every second, as by default but shorter lease. */
export const suiteWaiterLeaseMs = 3_000;

/**
 * Fair-mode clients for the conformance suite: each remembers its backend so the suite's kill hook
 * can crash it and the lost-message case can drop its grant subscriber.
 */
export class FairClients {
  private readonly backends = new WeakMap<LockClient, RedisBackend>();

  create(config: string | RedisBackendOptions, prefix: string): LockClient {
    const backend = createRedisBackend(config);
    const client = createLockClient({ backend, prefix });
    this.backends.set(client, backend);
    return client;
  }

  readonly kill = async (client: LockClient): Promise<void> => {
    this.backendOf(client).simulateCrash();
  };

  readonly hooks = {
    waiterLeaseMs: suiteWaiterLeaseMs,
    recheckBoundMs: Math.floor(suiteWaiterLeaseMs / 3),
    loseGrantMessages: (client: LockClient): void => this.backendOf(client).simulateLostGrantMessages(),
  };

  private backendOf(client: LockClient): RedisBackend {
    const backend = this.backends.get(client);
    if (backend === undefined) throw new Error('not a client of this FairClients');
    return backend;
  }
}
