/**
 * The key layout of etcd's Go `concurrency` package (and so of `etcdctl lock` / `etcdctl elect`):
 * a lock or election named N is the prefix `N/`; each contender puts `N/<lease id in hex>` with its
 * lease; the contender with the lowest create_revision under the prefix holds it.
 */

/**
 * The contenders' prefix of a lock or election (Go: `pfx + "/"`). A '/' inside the name is
 * percent-encoded (and '%' itself, so the mapping stays one-to-one): otherwise the prefix `a/` of
 * lock `a` would hold the contenders of lock `a/b` too, and the two would exclude each other, as
 * they do in Go. Every name without '/' and '%' is used as it is, so `etcdctl lock <name>` meets it.
 */
export function contendersPrefix(namespace: string, name: string): string {
  return `${namespace}${encodeName(name)}/`;
}

export function encodeName(name: string): string {
  return name.includes('/') || name.includes('%') ? name.replace(/%/g, '%25').replace(/\//g, '%2F') : name;
}

/** A lease id (etcd3 gives int64 as a decimal string) as Go's `%x` prints it: lower-case hex, no padding. */
export function leaseHex(leaseId: string): string {
  return BigInt(leaseId).toString(16);
}

/**
 * Our contender key. Go keys it by lease alone (one per session and name); a second hold of the same
 * name by another owner of this client gets a suffix, so that both are distinct contenders.
 */
export function contenderKey(prefix: string, leaseId: string, slot: number): string {
  return slot === 0 ? `${prefix}${leaseHex(leaseId)}` : `${prefix}${leaseHex(leaseId)}_${slot}`;
}

/** The end of the range of every key that starts with `prefix` (etcd's `WithPrefix`). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let index = end.length - 1; index >= 0; index -= 1) {
    if ((end[index] ?? 0) < 0xff) {
      end[index] = (end[index] ?? 0) + 1;
      return end.subarray(0, index + 1);
    }
  }
  // All 0xff: to the end of the keyspace.
  return Buffer.from([0]);
}
