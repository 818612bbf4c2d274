// Broken read-write locks, semaphores and multi-locks on etcd, each one request of the real recipe
// changed on its way to a real server (the backend's own etcd3 client, wrapped): the readWrite,
// semaphore and multi groups of the conformance suite must catch every one.
import { startEtcd, type ServerHandle } from '@deadbolt/conformance/servers';
import {
  allPermitsAtOnce,
  crashedReader,
  downgrade,
  electionKilledLeader,
  fifoAcrossModes,
  multiAllOrNothing,
  multiExcludesSingle,
  neverMoreThanPermits,
  oneReleaseOneWaiter,
  permitsMismatchRefused,
  queuedReadersTogether,
  readersShare,
  runCase,
  type ConformanceCase,
} from '@deadbolt/conformance';
import { createLockClient, type LockClient } from '@deadbolt/core';
import type { Etcd3, IRangeRequest, ITxnRequest } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend, etcdCapabilities, type EtcdBackend } from '../src/index.js';

/** One change to the requests the backend sends: a range, a txn, or the key or prefix a watch follows. */
interface Mutation {
  range?(request: IRangeRequest): IRangeRequest;
  txn?(request: ITxnRequest): ITxnRequest;
  watchKey?(key: Buffer): Buffer;
  watchPrefix?(prefix: Buffer): Buffer;
}

const endsWith = (key: Buffer | string | undefined, tail: string): boolean => key?.toString().endsWith(tail) === true;
/** A key no contender ever has: a watch on it never fires. */
const nowhere = (key: Buffer): Buffer => Buffer.concat([key, Buffer.from('/never')]);
/** The same range moved to a prefix where no key ever is: the read finds nothing. */
const elsewhere = (request: IRangeRequest): IRangeRequest => ({
  ...request,
  key: Buffer.from('nowhere/'),
  range_end: Buffer.from('nowhere0'),
});

const mutants: [string, ConformanceCase[], Mutation][] = [
  ['a waiter watches the wrong key (one that never goes)', [queuedReadersTogether, fifoAcrossModes, downgrade], { watchKey: nowhere }],
  ['a semaphore waiter watches the wrong prefix', [oneReleaseOneWaiter], { watchPrefix: nowhere }],
  [
    'a grant to the highest revision (a contender looks for keys above it, not below)',
    [readersShare, fifoAcrossModes],
    {
      range: (request) => {
        if (request.max_create_revision === undefined || request.keys_only) return request;
        const { max_create_revision: below, ...rest } = request;
        return { ...rest, min_create_revision: (BigInt(below) + 2n).toString() };
      },
    },
  ],
  [
    'a reader that ignores a lower writer',
    [readersShare, fifoAcrossModes],
    { range: (request) => (endsWith(request.key, '/write/') ? elsewhere(request) : request) },
  ],
  [
    'a writer that ignores a downgraded read',
    [downgrade],
    {
      range: (request) => (endsWith(request.key, '/downgrade/') ? elsewhere(request) : request),
    },
  ],
  [
    'a semaphore that counts all keys instead of those ahead',
    [allPermitsAtOnce, oneReleaseOneWaiter],
    {
      range: (request) => {
        if (!request.keys_only) return request;
        const { max_create_revision: _ahead, ...all } = request;
        return all;
      },
    },
  ],
  [
    'a semaphore that counts one key too few (a permit too many)',
    [allPermitsAtOnce, neverMoreThanPermits],
    { range: (request) => (request.keys_only ? { ...request, limit: 2 } : request) },
  ],
  [
    'permits judged against the newest key (our own) instead of the oldest',
    [permitsMismatchRefused],
    {
      txn: (request) => ({
        ...request,
        success: request.success?.map((op) =>
          op.request_range !== undefined && endsWith(op.request_range.key, '/permit/')
            ? { request_range: { ...op.request_range, sort_order: 'Descend' as const } }
            : op,
        ),
      }),
    },
  ],
  [
    'a contender key not attached to the session lease (it outlives a holder that died)',
    [electionKilledLeader, crashedReader],
    {
      txn: (request) => ({
        ...request,
        success: request.success?.map((op) => (op.request_put === undefined ? op : { request_put: { ...op.request_put, lease: '0' } })),
      }),
    },
  ],
  [
    'a multi-lock that never waits in a queue (its look for the key below finds nothing)',
    [multiAllOrNothing, multiExcludesSingle],
    {
      range: (request) => (request.max_create_revision !== undefined && !request.keys_only ? elsewhere(request) : request),
    },
  ],
];

/** Wraps the backend's own etcd3 client: every request passes through the mutation first. */
function mutateClient(backend: EtcdBackend, mutation: Mutation): void {
  const client = (backend as unknown as { site: { client: Etcd3 } }).site.client;
  const kv = client.kv;
  const range = kv.range.bind(kv);
  const txn = kv.txn.bind(kv);
  if (mutation.range) kv.range = (request, options) => range(mutation.range!(request), options);
  if (mutation.txn) kv.txn = (request, options) => txn(mutation.txn!(request), options);
  const watch = client.watch.bind(client);
  client.watch = () => {
    const builder = watch();
    const key = builder.key.bind(builder);
    const prefix = builder.prefix.bind(builder);
    builder.key = (value) => key(mutation.watchKey ? mutation.watchKey(Buffer.from(value)) : value);
    builder.prefix = (value) => prefix(mutation.watchPrefix ? mutation.watchPrefix(Buffer.from(value)) : value);
    return builder;
  };
}

describe.concurrent('the readWrite, semaphore, multi and election groups catch broken etcd recipes', () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startEtcd();
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const [what, cases, mutation] of mutants) {
    for (const testCase of cases) {
      it(`${what} fails "${testCase.title}"`, async () => {
        const backends = new WeakMap<LockClient, EtcdBackend>();
        const options = {
          name: `mutant: ${what}`,
          capabilities: etcdCapabilities,
          permitsRecorded: true,
          chaosOperations: 40,
          create: (_: unknown, { prefix }: { prefix: string }) => {
            const backend = createEtcdBackend(`${server.url}/mutants?sessionTtlMs=6000&dialTimeoutMs=3000&callTimeoutMs=3000`);
            mutateClient(backend, mutation);
            const client = createLockClient({ backend, prefix });
            backends.set(client, backend);
            return client;
          },
          kill: async (client: LockClient) => backends.get(client)?.close(),
        };
        const error = await runCase(testCase, options, server).then(
          () => undefined,
          (e: unknown) => e,
        );
        console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
        expect(error).toBeInstanceOf(Error);
      }, 90_000);
    }
  }
});
