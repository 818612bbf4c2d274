import { createLockClient, type LockClient } from '@deadbolt/core';
import { MemoryBackend, memoryCapabilities, memoryStore } from '@deadbolt/core/adapter';
import { describeLockConformance } from '../src/index.js';

// One backend per client on one shared store (as separate processes on one server), so that a
// client can be killed: its backend stops answering, its renewals fail, its leases run out.
const backends = new WeakMap<LockClient, MemoryBackend>();
const store = memoryStore('conformance');

describeLockConformance({
  name: 'memory',
  capabilities: memoryCapabilities,
  permitsRecorded: true,
  create: (_, { prefix }) => {
    const backend = new MemoryBackend(store);
    const client = createLockClient({ backend, prefix });
    backends.set(client, backend);
    return client;
  },
  kill: async (client) => {
    await backends.get(client)?.close();
  },
  residue: async (_, keyPrefix) => store.queued.residue(keyPrefix),
  // In-process operations cost microseconds: the full 1,000 random operations per chaos case.
  chaosOperations: 1_000,
  // The probe's scenario (issue 14): 10,000 waiters on one key, all served within the wait.
  manyWaiters: 10_000,
  // The store counts every operation that reaches it: rejected input must add none.
  commandCount: async () => store.operations,
  // An early expiry behind the holder's back: the store forgets the entry.
  expireHold: async (_, fullKey) => store.delete(fullKey),
});
