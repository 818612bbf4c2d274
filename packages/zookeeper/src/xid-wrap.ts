import type { Client } from 'node-zookeeper-client';

/** node-zookeeper-client's private connection state: the next request's xid. */
interface WithXid {
  readonly connectionManager?: { xid?: number };
}

const largestXid = 0x7fffffff;

/**
 * Numbers requests 1, 2, ... 2^31 - 2 and then from 1 again, as the Java client does
 * (ClientCnxn.getXid: "avoid negative cxid values", reset at Integer.MAX_VALUE). node-zookeeper-client
 * (1.1.3) counts its xid up for the life of the client, across reconnects, and writes it as a signed
 * 32-bit int: request 2^31 throws a RangeError while being written, and so does every request after
 * it. One session at 1,000 lock operations a second (about 5 requests each) gets there in five
 * days; from then on nothing on that client is ever sent again. Replies are matched to requests in
 * order by equality with the pending request's xid, and the few in flight at the wrap are far from 1.
 */
export function wrapXids(client: Client): void {
  const manager = (client as unknown as WithXid).connectionManager;
  if (manager === undefined || typeof manager.xid !== 'number') return;
  let next = manager.xid;
  Object.defineProperty(manager, 'xid', {
    configurable: true,
    enumerable: true,
    get: () => next,
    set: (value: number) => {
      next = value >= largestXid ? 1 : value;
    },
  });
}
