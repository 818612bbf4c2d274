import type { LockHolder } from '@deadbolt/core';
import { forcedMarkerMs, type BackendInspection, type Grant, type OperationsDriver } from '@deadbolt/core/adapter';
import type memjs from 'memjs';
import { expirySeconds } from './expiry.js';
import { encodeKey } from './keys.js';
import { permitsKeyOf } from './permits-record.js';
import { slotKey } from './semaphore-slots.js';
import { type Cas, deleteIfCas, getWithCas, getWithFlags, Opcode, request, Status, storeExtras } from './protocol.js';

/**
 * The operator API on memcached: inspect and forceRelease (capabilities.operations
 * `['inspect', 'forceRelease']`). memcached cannot enumerate its keys, so there is no list.
 *
 * The holds of a key are the mutex's item (the key itself) and a semaphore's slot items (one per
 * permit, while the semaphore's permits record names how many: permits-record.ts). An item stores
 * a random token, not the owner, and memcached has no fence: an inspection's holders carry neither
 * `owner` nor `fence`. `ttlLeftMs` is read from the lease end the holder stored in the item's flags
 * (on the holder's clock, so as good as the clocks agree; lock-delay included), absent where the
 * flags say nothing.
 *
 * forceRelease first stores a marker item beside the key naming `by` and the tokens it takes back,
 * then deletes each hold item while it still holds the token read (so a hold taken after the read
 * is not touched): the holder's next renewal is refused and reads the marker (forcedBy) to learn
 * who forced it.
 */
export function forcedKeyOf(key: string): string {
  return `${key}\u0000forced`;
}

type Run = <T>(action: string, key: string, operation: () => Promise<T>) => Promise<T>;

interface HoldItem {
  readonly storedKey: string;
  readonly kind: LockHolder['kind'];
}

interface Marker {
  readonly by: string;
  readonly tokens: readonly string[];
}

export class MemcachedOperations implements OperationsDriver {
  constructor(
    private readonly connection: () => memjs.Client,
    private readonly run: Run,
  ) {}

  inspect(key: string): Promise<BackendInspection> {
    return this.run('inspect', key, async () => {
      const client = this.connection();
      const items = await holdItemsOf(client, key);
      const found = await Promise.all(items.map((item) => getWithFlags(client, encodeKey(item.storedKey))));
      const now = Date.now();
      const holders: LockHolder[] = [];
      found.forEach((current, index) => {
        if (current === undefined) return;
        const remainingMs = current.flags === 0 ? undefined : Math.max(0, (current.flags - (now % 2 ** 32)) | 0);
        holders.push({ kind: items[index]!.kind, ...(remainingMs === undefined ? {} : { ttlLeftMs: remainingMs }) });
      });
      return { holders };
    });
  }

  forceRelease(key: string, by: string): Promise<boolean> {
    return this.run('forceRelease', key, async () => {
      const client = this.connection();
      const items = await holdItemsOf(client, key);
      const found = await Promise.all(items.map((item) => getWithCas(client, encodeKey(item.storedKey))));
      const held = items.flatMap((item, index) => {
        const current = found[index];
        return current === undefined ? [] : [{ storedKey: item.storedKey, token: current.value.toString('utf8'), cas: current.cas }];
      });
      if (held.length === 0) return false;
      // The marker goes first: a holder refused after the delete always finds it.
      const marker: Marker = { by, tokens: held.map((hold) => hold.token) };
      const stored = await request(
        client,
        Opcode.set,
        encodeKey(forcedKeyOf(key)),
        storeExtras(expirySeconds(forcedMarkerMs)),
        JSON.stringify(marker),
      );
      if (stored.status !== Status.ok) throw new Error(`memcached SET answered status 0x${stored.status.toString(16)}`);
      const deleted = await Promise.all(held.map((hold) => deleteHold(client, hold.storedKey, hold.token, hold.cas)));
      return deleted.some(Boolean);
    });
  }

  /** The operator who forced this grant's item away, from the marker (undefined: not forced). */
  forcedBy(grant: Grant): Promise<string | undefined> {
    return this.run('renew', grant.key, async () => {
      const current = await getWithCas(this.connection(), encodeKey(forcedKeyOf(grant.key)));
      if (current === undefined) return undefined;
      const marker = parseMarker(current.value);
      return marker?.tokens.includes(grant.token) ? marker.by : undefined;
    });
  }
}

/**
 * Deletes the item while it still holds `token`: a renewal between our read and the delete changes
 * the CAS but not the token, so the delete is tried again on the item as renewed (a few times: a
 * holder renews at most once a tick). Another holder's item (another token) is never deleted.
 */
async function deleteHold(client: memjs.Client, storedKey: string, token: string, cas: Cas): Promise<boolean> {
  const key = encodeKey(storedKey);
  let current: Cas = cas;
  for (let round = 0; round < 3; round += 1) {
    if (await deleteIfCas(client, key, current)) return true;
    const now = await getWithCas(client, key);
    if (now === undefined || now.value.toString('utf8') !== token) return false;
    current = now.cas;
  }
  return false;
}

/** The items that can hold `key`: its own, and its semaphore's slots while the permits record stands. */
async function holdItemsOf(client: memjs.Client, key: string): Promise<HoldItem[]> {
  const items: HoldItem[] = [{ storedKey: key, kind: 'mutex' }];
  const record = await getWithFlags(client, encodeKey(permitsKeyOf(key)));
  const permits = record === undefined ? 0 : Number(record.value.toString('utf8'));
  if (Number.isInteger(permits) && permits > 0) {
    for (let slot = 0; slot < permits; slot += 1) items.push({ storedKey: slotKey(key, slot), kind: 'permit' });
  }
  return items;
}

function parseMarker(value: Buffer): Marker | undefined {
  try {
    const marker = JSON.parse(value.toString('utf8')) as Partial<Marker>;
    return typeof marker.by === 'string' && Array.isArray(marker.tokens) ? { by: marker.by, tokens: marker.tokens } : undefined;
  } catch {
    return undefined;
  }
}
