import { batchWrite } from '@deadbolt/core/adapter';
import type { Socket } from 'node:net';
import type { Client } from 'node-zookeeper-client';

/** node-zookeeper-client's private connection state: the socket of the current connection. */
interface WithSocket {
  readonly connectionManager?: { readonly socket?: Socket };
}

/**
 * Lets the requests a client sends within one turn of the event loop leave in one write (the
 * adapter kit's batchWrite). node-zookeeper-client writes every request to its socket at once, one
 * write(2) per packet: 3.4 writes per acquire/release cycle at 50 keys in flight, 0.3 with this.
 * No flush inside the turn: ZooKeeper's own queueing of one session's requests keeps the server busy.
 */
export function batchWrites(client: Client): void {
  const socket = (client as unknown as WithSocket).connectionManager?.socket;
  if (socket === undefined || socket.destroyed) return;
  batchWrite(socket);
}
