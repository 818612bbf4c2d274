import { randomUUID } from 'node:crypto';
import type { AcquireRequest, Grant, RunsDriver } from '@deadbolt/core/adapter';
import type { Etcd3 } from 'etcd3';
import { callOptions } from './client.js';
import type { ResolvedEtcdOptions } from './options.js';

/**
 * Run-once jobs on etcd. A lock's key rides the client's session lease, which ends with the process;
 * a run's claim must outlive it (ShedLock's lockAtLeastFor), so each claim gets a lease of its own,
 * counted down by the server. A claim is one txn (create the job's key with that lease if it is
 * absent); the fence is the key's create_revision. Shortening moves the key to a new, shorter lease
 * (a put guarded by our token keeps the create_revision) and revokes the old one. The record lives
 * in keys without a lease. Every key starts with NUL, which no lock key has, so none meets a lock's.
 *
 * etcd counts lease TTLs in whole seconds (and grants no less than its minimum TTL, 1.5 s with the
 * default election timeout): a claim is rounded up, so lockAtLeastForMs is never cut short and a
 * dead winner's name may stay taken up to about 2 s past lockAtMostForMs (fn's signal still aborts
 * on time, in the runner).
 */
export function runOnceOn(client: Etcd3, options: ResolvedEtcdOptions, bounded: Bounded): Required<RunsDriver> {
  const claimKey = (key: string) => Buffer.from(`${options.namespace}\u0000run/${key}`, 'utf8');
  const recordKey = (key: string) => Buffer.from(`${options.namespace}\u0000run-record/${key}`, 'utf8');
  const runIdKey = (key: string) => Buffer.from(`${options.namespace}\u0000run-id/${key}`, 'utf8');
  /** Each claim's lease, by token, until it is shortened or ended (then it is the server's alone). */
  const leases = new Map<string, string>();

  const grantLease = async (ms: number): Promise<string> =>
    (await client.leaseClient.leaseGrant({ TTL: Math.max(1, Math.ceil(ms / 1000)) }, callOptions(options))).ID;
  const revoke = (id: string): Promise<unknown> => client.leaseClient.leaseRevoke({ ID: id }, callOptions(options)).catch(() => undefined);
  const ours = (grant: Grant) => ({
    key: claimKey(grant.key),
    target: 'Value' as const,
    result: 'Equal' as const,
    value: Buffer.from(grant.token),
  });

  return {
    claimRun: (request: AcquireRequest) =>
      bounded('runOnce', request.key, async (): Promise<Grant | undefined> => {
        const lease = await grantLease(request.ttlMs);
        const token = randomUUID();
        const key = claimKey(request.key);
        const response = await client.kv.txn(
          {
            compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
            success: [{ request_put: { key, value: Buffer.from(token), lease } }],
          },
          callOptions(options),
        );
        if (!response.succeeded) {
          await revoke(lease);
          return undefined;
        }
        leases.set(token, lease);
        return { key: request.key, owner: request.owner, token, fence: Number(response.header.revision) };
      }),
    shortenRun: (grant: Grant, keepMs: number) =>
      bounded('runOnce', grant.key, async () => {
        const old = leases.get(grant.token);
        if (keepMs <= 0) {
          leases.delete(grant.token);
          const response = await client.kv.txn(
            { compare: [ours(grant)], success: [{ request_delete_range: { key: claimKey(grant.key) } }] },
            callOptions(options),
          );
          if (old !== undefined) await revoke(old);
          return response.succeeded;
        }
        const lease = await grantLease(keepMs);
        const response = await client.kv.txn(
          { compare: [ours(grant)], success: [{ request_put: { key: claimKey(grant.key), value: Buffer.from(grant.token), lease } }] },
          callOptions(options),
        );
        if (!response.succeeded) {
          await revoke(lease);
          return false;
        }
        // Nothing is asked of a shortened claim again: it runs out on the server, untracked here.
        leases.delete(grant.token);
        if (old !== undefined) await revoke(old);
        return true;
      }),
    saveRun: (key: string, runId: string, record: string, replaces?: string) =>
      bounded('runOnce', key, async () => {
        const writes = [
          { request_put: { key: runIdKey(key), value: Buffer.from(runId) } },
          { request_put: { key: recordKey(key), value: Buffer.from(record, 'utf8') } },
        ];
        const compare =
          replaces === undefined
            ? []
            : [{ key: runIdKey(key), target: 'Value' as const, result: 'Equal' as const, value: Buffer.from(replaces) }];
        return (await client.kv.txn({ compare, success: writes }, callOptions(options))).succeeded;
      }),
    loadRun: (key: string) =>
      bounded('lastRun', key, async () => {
        const response = await client.kv.range({ key: recordKey(key) }, callOptions(options));
        return response.kvs[0]?.value.toString('utf8');
      }),
  };
}

export type Bounded = <T>(action: string, key: string, body: () => Promise<T>) => Promise<T>;
