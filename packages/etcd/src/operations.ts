import type { LockHolder } from '@deadbolt/core';
import { forcedMarkerMs, type BackendInspection } from '@deadbolt/core/adapter';
import type { Etcd3, IKeyValue } from 'etcd3';
import { contendersPrefix, prefixEnd } from './keys.js';

/**
 * The operator API on etcd (inspect, forceRelease, list, an election's leader with its term), read
 * from the recipes' own keys: every hold of lock N is a contender key under `N/`, ordered by
 * create_revision (keys.ts, kinds.ts).
 */

type CallOptions = () => { readonly deadline: number };

/**
 * Where forceRelease leaves its markers: `<namespace>%forced/<revision>/<contender key>`. An encoded
 * lock name has '%' only as `%25` or `%2F` (keys.ts), so no lock's prefix ever holds a marker.
 */
const markerSegment = '%forced';
/** etcd refuses a txn of more than 128 operations (--max-txn-ops, its default). */
const maxTxnOps = 128;
/** How many times forceRelease reads again when its txn finds the keys changed. */
const maxAttempts = 10;

export function markerKey(namespace: string, token: string, revision: string): string {
  return `${namespace}${markerSegment}/${revision}/${token}`;
}

/** A contender key's kind and whether it holds, by the recipes' rules; `undefined`: not a contender of ours. */
type Kind = LockHolder['kind'] | 'downgrade';

function kindOf(rest: string): Kind | undefined {
  const slash = rest.indexOf('/');
  if (slash < 0) return rest === '' ? undefined : 'mutex';
  const kind = rest.slice(0, slash);
  return kind === 'read' || kind === 'write' || kind === 'permit' || kind === 'downgrade' ? kind : undefined;
}

interface Contender {
  readonly kv: IKeyValue;
  readonly kind: Kind;
  readonly holds: boolean;
}

/**
 * Who holds, given every key under `N/` oldest first: a mutex or election contender and a writer
 * hold when nothing under `N/` is older; a reader when no writer is older; a downgraded read at once;
 * a permit while among the first `permits` permit keys (the oldest permit key records the count).
 */
export function classify(prefix: string, kvs: readonly IKeyValue[]): Contender[] {
  const typed = kvs.flatMap((kv) => {
    const kind = kindOf(kv.key.toString('utf8').slice(prefix.length));
    return kind === undefined ? [] : [{ kv, kind }];
  });
  const permits = Number(typed.find((one) => one.kind === 'permit')?.kv.value.toString('utf8'));
  let writerSeen = false;
  let permitsSeen = 0;
  return typed.map(({ kv, kind }, index) => {
    let holds: boolean;
    if (kind === 'mutex' || kind === 'write') holds = index === 0;
    else if (kind === 'read') holds = !writerSeen;
    else if (kind === 'downgrade') holds = true;
    else holds = Number.isInteger(permits) && permitsSeen < permits;
    if (kind === 'write') writerSeen = true;
    if (kind === 'permit') permitsSeen += 1;
    return { kv, kind, holds };
  });
}

/** A lock name from the first segment of a key after the namespace (keys.ts's encoding undone), or undefined for a marker. */
export function decodeSegment(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  if (/%(?!25|2F)/.test(segment)) return undefined;
  return segment.replace(/%2F/g, '/').replace(/%25/g, '%');
}

/** keys.ts's encoding applied to a prefix of names (always: a name starting with it is encoded iff it has '/' or '%'). */
function encodePrefix(prefix: string): string {
  return prefix.replace(/%/g, '%25').replace(/\//g, '%2F');
}

export class EtcdOperations {
  constructor(
    private readonly client: Etcd3,
    private readonly namespace: string,
    private readonly call: CallOptions,
  ) {}

  /** Every contender of the key, oldest first, in one range (one snapshot). */
  private async contenders(fullKey: string): Promise<{ prefix: Buffer; contenders: Contender[]; keys: number; revision: string }> {
    const text = contendersPrefix(this.namespace, fullKey);
    const prefix = Buffer.from(text, 'utf8');
    const response = await this.client.kv.range(
      { key: prefix, range_end: prefixEnd(prefix), sort_target: 'Create', sort_order: 'Ascend' },
      this.call(),
    );
    return { prefix, contenders: classify(text, response.kvs), keys: response.kvs.length, revision: response.header.revision };
  }

  /** One range for the holds, then one leaseTimeToLive per distinct lease among the holders. */
  async inspect(fullKey: string): Promise<BackendInspection> {
    const { contenders } = await this.contenders(fullKey);
    const holding = contenders.filter((one) => one.holds);
    const leases = [...new Set(holding.map((one) => one.kv.lease))];
    const ttls = new Map(
      await Promise.all(
        leases.map(async (lease) => {
          if (lease === '0') return [lease, undefined] as const;
          const answer = await this.client.leaseClient.leaseTimeToLive({ ID: lease }, this.call());
          const seconds = Number(answer.TTL);
          return [lease, seconds > 0 ? seconds * 1000 : undefined] as const;
        }),
      ),
    );
    const holders = holding.map(({ kv, kind }): LockHolder => {
      const ttlLeftMs = ttls.get(kv.lease);
      const owner = kv.value.toString('utf8');
      return {
        kind: kind === 'downgrade' ? 'read' : kind,
        fence: Number(kv.create_revision),
        ...(kind === 'mutex' && owner !== '' ? { owner } : {}),
        ...(ttlLeftMs === undefined ? {} : { ttlLeftMs }),
      };
    });
    const waiters = contenders.length - holding.length;
    return waiters > 0 ? { holders, waiters } : { holders };
  }

  /**
   * One txn deletes every holder's key and puts a marker naming `by` for each, on a lease of its own
   * that etcd ends after forcedMarkerMs. Waiters keep their keys, so their place: the next in line
   * holds at once (deleting a waiter's key would end its acquire early, as in Go). The txn runs only if
   * no key under the prefix changed since the range that named the holders; else it reads again, a
   * few times at most (contenders arriving without pause).
   */
  async forceRelease(fullKey: string, by: string): Promise<boolean> {
    let markerLease: string | undefined;
    for (let attempt = 1; ; attempt += 1) {
      const { prefix, contenders, revision } = await this.contenders(fullKey);
      const holders = contenders.filter((one) => one.holds);
      if (holders.length === 0) return false;
      markerLease ??= (await this.client.leaseClient.leaseGrant({ TTL: Math.ceil(forcedMarkerMs / 1000) }, this.call())).ID;
      // etcd's --max-txn-ops (128): more holders than half of it (readers) and the whole prefix goes at once.
      const deletes =
        holders.length <= maxTxnOps / 2
          ? holders.map(({ kv }) => ({ request_delete_range: { key: kv.key } }))
          : [{ request_delete_range: { key: prefix, range_end: prefixEnd(prefix) } }];
      const marked = (deletes.length === 1 ? [...holders, ...contenders.filter((one) => !one.holds)] : holders).slice(
        0,
        maxTxnOps - deletes.length,
      );
      const response = await this.client.kv.txn(
        {
          compare: [
            { key: prefix, range_end: prefixEnd(prefix), target: 'Mod', result: 'Less', mod_revision: (BigInt(revision) + 1n).toString() },
          ],
          success: [
            ...deletes,
            ...marked.map(({ kv }) => ({
              request_put: {
                key: Buffer.from(markerKey(this.namespace, kv.key.toString('utf8'), kv.create_revision), 'utf8'),
                value: Buffer.from(by, 'utf8'),
                lease: markerLease,
              },
            })),
          ],
        },
        this.call(),
      );
      if (response.succeeded) {
        const deleted = response.responses
          .slice(0, deletes.length)
          .reduce((sum, one) => sum + Number(one.response_delete_range.deleted), 0);
        return deleted > 0;
      }
      if (attempt >= maxAttempts) throw new Error(`the keys of ${fullKey} changed under each of ${maxAttempts} force attempts`);
    }
  }

  /** The marker forceRelease left for this contender key, as it was created. */
  async forcedBy(token: string, revision: string): Promise<string | undefined> {
    const response = await this.client.kv.range({ key: Buffer.from(markerKey(this.namespace, token, revision), 'utf8') }, this.call());
    return response.kvs[0]?.value.toString('utf8');
  }

  /** Go's Election.Leader with its term: the first-created key under the prefix, its value and create_revision. */
  async leaderInfo(fullKey: string): Promise<{ id: string; term: number } | undefined> {
    const prefix = Buffer.from(contendersPrefix(this.namespace, fullKey), 'utf8');
    const response = await this.client.kv.range(
      { key: prefix, range_end: prefixEnd(prefix), sort_target: 'Create', sort_order: 'Ascend', limit: 1 },
      this.call(),
    );
    const first = response.kvs[0];
    return first === undefined ? undefined : { id: first.value.toString('utf8'), term: Number(first.create_revision) };
  }

  /**
   * The lock names under `prefix`, each once, in key order: a range (keys only, a page at a time)
   * from the encoded prefix; after each name found, the next read starts past all its keys.
   */
  async *listKeys(prefix: string): AsyncIterable<string> {
    const start = Buffer.from(`${this.namespace}${encodePrefix(prefix)}`, 'utf8');
    const end = prefixEnd(start);
    let from: Buffer = start;
    for (;;) {
      const response = await this.client.kv.range({ key: from, range_end: end, keys_only: true, limit: 100 }, this.call());
      let next: Buffer | undefined;
      for (const kv of response.kvs) {
        if (next !== undefined && Buffer.compare(kv.key, next) < 0) continue;
        const rest = kv.key.toString('utf8').slice(this.namespace.length);
        const slash = rest.indexOf('/');
        if (slash < 0) {
          next = Buffer.concat([kv.key, Buffer.from([0])]);
          continue;
        }
        const segment = rest.slice(0, slash);
        // Past every key of this name: `<segment>0` ('0' follows '/').
        next = Buffer.from(`${this.namespace}${segment}0`, 'utf8');
        const name = decodeSegment(segment);
        if (name?.startsWith(prefix)) yield name;
      }
      if (!response.more || next === undefined) return;
      from = next;
    }
  }
}
