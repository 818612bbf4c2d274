import { InvalidArgumentError } from '@deadbolt/core/adapter';
import { nodePrefix } from './naming.js';

/**
 * ZooKeeper refuses any request longer than `jute.maxbuffer` (default 0xfffff = 1,048,575 bytes):
 * the server reads the length, finds it too large and drops the connection, so the client sees only
 * CONNECTION_LOSS, tries again, and times out saying nothing true. A multi-lock enqueues under every
 * path in one `multi` (multi-recipe.ts), whose size is known before it is sent; this measures it and
 * refuses a set that cannot fit, before any I/O. One multi is what makes every two multi-locks queue
 * in the same relative order under every path they share (no deadlock), so the set is not split.
 */
export const defaultJuteMaxBuffer = 0xfffff;

/** A jute string or buffer: int length, then the bytes. */
const sized = (bytes: number): number => 4 + bytes;
/** MultiHeader: int type, boolean done, int err. */
const multiHeaderBytes = 4 + 1 + 4;
/** ACL.OPEN_ACL_UNSAFE, what the create sends: a vector of one (int perms, string "world", string "anyone"). */
const openAclBytes = 4 + (4 + sized(5) + sized(6));
/** RequestHeader (int xid, int type) of the multi itself. */
const requestHeaderBytes = 4 + 4;
/** A protection guid as newGuid() makes it (a UUID). */
const guidStandIn = '00000000-0000-0000-0000-000000000000';

export interface ContenderSpec {
  readonly lockPath: string;
  readonly data: Buffer;
  readonly nodeName?: string;
}

/** The bytes the server reads for a multi that creates one contender node per spec (after the 4-byte length). */
export function multiCreateBytes(specs: readonly ContenderSpec[]): number {
  let bytes = requestHeaderBytes + multiHeaderBytes; // the closing header (type -1, done)
  for (const spec of specs) {
    const path = Buffer.byteLength(nodePrefix(spec.lockPath, guidStandIn, spec.nodeName));
    bytes += multiHeaderBytes + sized(path) + sized(spec.data.length) + openAclBytes + 4; // + int flags
  }
  return bytes;
}

/** InvalidArgumentError, before any I/O, when the multi for `specs` is longer than the server accepts. */
export function checkMultiFits(specs: readonly ContenderSpec[], juteMaxBuffer: number, label: string): void {
  const bytes = multiCreateBytes(specs);
  if (bytes <= juteMaxBuffer) return;
  const perKey = Math.ceil(bytes / specs.length);
  throw new InvalidArgumentError(
    'keys',
    `${specs.length} keys make a ${bytes}-byte multi request, above ZooKeeper's jute.maxbuffer of ${juteMaxBuffer} bytes ` +
      `(about ${Math.floor((juteMaxBuffer - requestHeaderBytes - multiHeaderBytes) / perKey)} keys of this length fit): ` +
      'take fewer keys per acquireAll, or raise jute.maxbuffer on every server and pass the same value as the juteMaxBuffer option',
    { key: label, backend: 'zookeeper' },
  );
}
