import { createHash } from 'node:crypto';

/**
 * The advisory-lock id of a key: the first 8 bytes of SHA-256(namespace || 0x00 || key) (UTF-8),
 * read as a big-endian SIGNED 64-bit integer, the type pg_advisory_lock(bigint) takes. Stable across
 * versions and languages. A DBA computes it in SQL (PostgreSQL 11+):
 *
 *   SELECT ('x' || substr(encode(sha256(convert_to('<namespace>', 'UTF8') || '\x00'::bytea || convert_to('<key>', 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint;
 *
 * (the 0x00 separator is a bytea because text cannot hold NUL), and finds the holder in pg_locks:
 * a bigint advisory lock shows as classid = its high 32 bits, objid = its low 32 bits (unsigned
 * oids), objsubid = 1 (`advisoryLockParts` computes them), i.e.
 *
 *   SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1
 *     AND (classid::bigint << 32 | objid::bigint) = <id>;
 *
 * Collisions: two distinct keys share an id with probability 2^-64; with n keys in use at once the
 * chance that any two collide is about n^2 / 2^65 (1e-10 for a million keys). A collision only makes
 * two keys exclude each other, it never lets two holders into one key.
 */
export function advisoryLockId(key: string, namespace = ''): bigint {
  const digest = createHash('sha256')
    .update(Buffer.from(`${namespace}\u0000${key}`, 'utf8'))
    .digest();
  return digest.readBigInt64BE(0);
}

/** Where the id shows up in pg_locks: classid (high 32 bits) and objid (low 32 bits), objsubid = 1. */
export function advisoryLockParts(id: bigint): { readonly classid: number; readonly objid: number } {
  const unsigned = BigInt.asUintN(64, id);
  return { classid: Number(unsigned >> 32n), objid: Number(unsigned & 0xffffffffn) };
}
