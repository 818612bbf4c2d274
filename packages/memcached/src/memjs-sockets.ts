import type memjs from 'memjs';
import type { Socket } from 'node:net';

/** The memjs internals this module touches: each server's current socket and the method that opens one. */
interface MemjsServer {
  _socket?: Socket;
  sock(sasl: boolean, go: (socket: Socket) => void): void;
}

/** Sockets memjs opened for one client and that are not closed yet (see trackSockets). */
const openSockets = new WeakMap<memjs.Client, Set<Socket>>();

function serversOf(client: memjs.Client): MemjsServer[] {
  return (client as unknown as { servers: MemjsServer[] }).servers;
}

/**
 * Records every socket memjs opens for `client`, so that closeHard can end them all. memjs keeps
 * only its latest socket per server, and loses even that one after a request timeout: it drops the
 * timed-out socket and opens a new one, and when the old one finally closes, its 'close' handler
 * clears the server's socket field, which by then holds the new socket. That socket stays open,
 * referenced by nobody, until the process exits (found by the conformance case "frozen server
 * during acquire", which checks every handle the client opened: a TCP socket outlived close()).
 */
export function trackSockets(client: memjs.Client): void {
  const open = new Set<Socket>();
  openSockets.set(client, open);
  for (const server of serversOf(client)) {
    const sock = server.sock;
    server.sock = function (this: MemjsServer, sasl, go) {
      const before = this._socket;
      sock.call(this, sasl, go);
      const made = this._socket;
      if (made !== undefined && made !== before) {
        open.add(made);
        made.once('close', () => open.delete(made));
      }
    };
  }
}

/** memjs's close() only half-closes its current sockets (socket.end()); destroy every one it opened, so none outlives close(). */
export function closeHard(client: memjs.Client): void {
  for (const server of serversOf(client)) server._socket?.destroy();
  for (const socket of openSockets.get(client) ?? []) socket.destroy();
  openSockets.delete(client);
  client.close();
}
