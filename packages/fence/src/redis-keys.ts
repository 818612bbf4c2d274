/**
 * Where the fence of a Redis key is kept: a key of its own, in the same Redis Cluster slot as the
 * value (so one script may touch both), under a name no other key's record can have. The value key
 * stays exactly the caller's, so plain GET readers are unaffected.
 * Slot rules: https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags
 */

const slotCount = 16_384;

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
function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

export function slotOf(key: string): number {
  return crc16(hashedPart(key)) % slotCount;
}

let tagForSlot: string[] | undefined;

/** A brace-free tag per slot, found once by sweeping base-36 numbers (about 150k CRC16s, tens of ms). */
function tagOfSlot(slot: number): string {
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

/** The names of fence records start with this; no data key may (it could overwrite a record). */
export const recordPrefix = 'deadbolt-fence:';

/**
 * The key of `key`'s fence record. Three forms, told apart by their prefix so two keys never share
 * a record (`abc` and `{abc}` hash alike; their records differ): a key with its own hash tag keeps
 * it behind a brace-free prefix; a key with no `}` is wrapped as the tag; any other key is preceded
 * by a tag of its slot. The prefix differs from the lock adapter's `{k}:fence` counter.
 */
export function fenceRecordKey(key: string): string {
  if (hashedPart(key) !== key) return `${recordPrefix}t:${key}`;
  if (!key.includes('}')) return `${recordPrefix}k:{${key}}`;
  return `${recordPrefix}s:{${tagOfSlot(slotOf(key))}}${key}`;
}
