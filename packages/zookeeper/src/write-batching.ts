import type { Socket } from 'node:net';
import type { Client } from 'node-zookeeper-client';

/** node-zookeeper-client's private connection state: the socket of the current connection. */
interface WithSocket {
  readonly connectionManager?: { readonly socket?: Socket };
}

/** A socket that has sent a request in the current turn of the event loop; `corked` once a second one came. */
interface Turn {
  corked: boolean;
}

const turns = new WeakMap<Socket, Turn>();

/**
 * Lets the requests a client sends within one turn of the event loop leave in one write.
 * node-zookeeper-client writes every request to its socket at once, one write(2) per packet; with
 * many locks in flight on one session (50 keys cycling, a crowd of local waiters) those syscalls
 * were the largest single cost in the client's CPU profile (~40% of its busy time at 50 keys in
 * flight; 3.4 writes per acquire/release cycle, 0.3 with this). The first request of a turn is
 * written at once, so a lone request (one lock, or one waiter per session) waits for nothing; from
 * the second on the socket is corked until the event loop's check phase (setImmediate runs right
 * after the I/O callbacks and their promise continuations), which sends them in one writev. Order on
 * the wire is unchanged.
 */
export function batchWrites(client: Client): void {
  const socket = (client as unknown as WithSocket).connectionManager?.socket;
  if (socket === undefined || socket.destroyed) return;
  const turn = turns.get(socket);
  if (turn === undefined) {
    const fresh: Turn = { corked: false };
    turns.set(socket, fresh);
    setImmediate(() => {
      turns.delete(socket);
      if (fresh.corked) socket.uncork();
    });
    return;
  }
  if (!turn.corked) {
    turn.corked = true;
    socket.cork();
  }
}
