/**
 * Key naming. The lock lives under the exact key core hands us (so with an empty prefix the setnx
 * mode interoperates with other SET NX PX clients). Every other key a script touches (the fencing
 * counter) must hash to the same Redis Cluster slot, so it carries the lock key's hash tag.
 * Slot rules: https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags
 */

export const slotCount = 16_384;

/** The part of a key Redis Cluster hashes: the first non-empty `{...}`, else the whole key. */
export function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

/** CRC16/XMODEM over the UTF-8 bytes, as Redis Cluster computes key slots. */
export function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

export function slotOf(key: string): number {
  return crc16(hashedPart(key)) % slotCount;
}

let tagForSlot: string[] | undefined;

/**
 * A tag `{t}` whose slot equals `slot`: for keys whose hashed part cannot be wrapped in braces (it
 * contains `}`) and for fair mode's per-slot grant channels on Cluster. The first call sweeps base-36
 * numbers once until every slot has one (about 150k CRC16s of 3 to 4 bytes, tens of ms).
 */
export function tagOfSlot(slot: number): string {
  if (tagForSlot === undefined) {
    const table = new Array<string | undefined>(slotCount);
    let missing = slotCount;
    for (let candidate = 0; missing > 0; candidate += 1) {
      const text = candidate.toString(36);
      const owner = crc16(text) % slotCount;
      if (table[owner] === undefined) {
        table[owner] = text;
        missing -= 1;
      }
    }
    tagForSlot = table as string[];
  }
  return tagForSlot[slot]!;
}

/** A key next to `key` (same cluster slot) for `purpose`, e.g. the fencing counter. */
export function siblingKey(key: string, purpose: string): string {
  const hashed = hashedPart(key);
  if (hashed !== key) return `${key}:${purpose}`; // the key has its own tag; appending keeps it
  if (!key.includes('}')) return `{${key}}:${purpose}`;
  return `{${tagOfSlot(slotOf(key))}}:${purpose}:${key}`;
}

export function fenceKey(key: string): string {
  return siblingKey(key, 'fence');
}

/**
 * Set by every waiter once its subscription is live (setnx, hash-reentrant; mark-waiting.lua): a
 * release publishes only while it exists, so an uncontended cycle costs no PUBLISH.
 */
export function waitingKey(key: string): string {
  return siblingKey(key, 'waiting');
}

/**
 * How long a waiter's mark lives. Core waits at most 2 s (its notification fallback) before it
 * tries again and marks again; the margin covers a slow event loop. Were it to lapse, a waiter would
 * miss one message and wake at its own timer: slower, never unsafe.
 */
export const waitingMarkMs = 10_000;

/** The pub/sub channel a release is announced on. Channels are not keys: no slot constraint. */
export function releaseChannel(key: string): string {
  return `deadbolt:released:${key}`;
}
