import { randomUUID } from 'node:crypto';

/**
 * Lock paths and node names, following Apache Curator so that a Curator InterProcessMutex on the
 * same path is the same lock:
 * - LockInternals creates `<lockPath>/lock-` EPHEMERAL_SEQUENTIAL, in "protection" mode
 *   (CreateBuilder.withProtection) prefixed `_c_<UUID>-`: `_c_<uuid>-lock-0000000042`.
 * - StandardLockInternalsDriver.fixForSorting orders children by the text after the last `lock-`
 *   (the 10-digit, zero-padded sequence), so string order is numeric order.
 */
export const lockName = 'lock-';
/** Curator LeaderLatch's LOCK_NAME: its nodes are `_c_<uuid>-latch-<seq>`, sorted by the text after `latch-`. */
export const latchName = 'latch-';
const protectedPrefix = '_c_';

/** Characters ZooKeeper's PathUtils.validatePath rejects, plus '/' and '%' (our escape character). */
// ZooKeeper checks UTF-16 units: astral characters (emoji) arrive as surrogates, which it refuses.
const unsafe = /[\p{Cc}\ud800-\uf8ff\ufff0-\uffff\u{10000}-\u{10ffff}/%]/gu;

/**
 * A key as one path segment. Keys are free text but a znode name cannot contain '/' (it would make
 * nested nodes, which Curator would not see as the same lock) or control characters: those, and
 * '%' itself, are percent-encoded (UTF-8), so the mapping is injective and every other key maps to
 * itself: key `orders/42` is the node `orders%2F42`. '.' and '..' are encoded whole.
 */
export function encodeKey(key: string): string {
  let encoded = encodedKeys.get(key);
  if (encoded === undefined) {
    encoded = encodeKeyUncached(key);
    // A bounded cache: keys in use repeat on every acquire and release (the Unicode-class regex costs
    // more than the rest of building the path); a stream of one-off keys just refills it.
    if (encodedKeys.size >= encodedKeysMax) encodedKeys.clear();
    encodedKeys.set(key, encoded);
  }
  return encoded;
}

const encodedKeys = new Map<string, string>();
const encodedKeysMax = 4096;

function encodeKeyUncached(key: string): string {
  if (key === '.') return '%2E';
  if (key === '..') return '%2E%2E';
  return key.replace(unsafe, (character) =>
    [...Buffer.from(character, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

export function lockPath(basePath: string, key: string): string {
  return `${basePath}/${encodeKey(key)}`;
}

/** A fresh protection id (Curator: UUID.randomUUID()). */
export function newGuid(): string {
  return randomUUID();
}

/** The path to create (ZooKeeper appends the sequence): `<lockPath>/_c_<guid>-lock-` (or `-latch-`). */
export function nodePrefix(path: string, guid: string, name = lockName): string {
  return `${path}/${protectedPrefix}${guid}-${name}`;
}

/** Whether a child is the node created with this guid (Curator's findProtectedNodeInForeground). */
export function isOurs(child: string, guid: string): boolean {
  return child.startsWith(`${protectedPrefix}${guid}`);
}

/** StandardLockInternalsDriver.fixForSorting: the text after the last `lock-` (or `latch-`). */
export function sortKey(child: string, name = lockName): string {
  const index = child.lastIndexOf(name);
  return index >= 0 ? child.slice(index + name.length) : child;
}

/** The lock's contenders, in order: children whose name contains `lock-` (or `latch-`), by sequence. */
export function contenders(children: readonly string[], name = lockName): string[] {
  return children
    .filter((child) => child.includes(name))
    .map((child) => [sortKey(child, name), child] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, child]) => child);
}

/**
 * Where `ours` stands among the contenders, in one pass (no sort: a crowd's listing is long):
 * undefined when it is not listed, null when it sorts first, else the contender just before it.
 */
export function predecessorOf(children: readonly string[], ours: string, name = lockName): string | null | undefined {
  const mine = sortKey(ours, name);
  let listed = false;
  let before: string | null = null;
  let beforeKey = '';
  for (const child of children) {
    if (child === ours) {
      listed = true;
      continue;
    }
    if (!child.includes(name)) continue;
    const key = sortKey(child, name);
    if (key < mine && (before === null || key > beforeKey)) {
      before = child;
      beforeKey = key;
    }
  }
  return listed ? before : undefined;
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
