import type memjs from 'memjs';
import type { Socket } from 'node:net';

/** The memjs internals this module touches: each server's current socket, the method that opens one, its requests' deadlines and its reset. */
interface MemjsServer {
  _socket?: Socket;
  sock(sasl: boolean, go: (socket: Socket) => void): void;
  /** The deadlines of the requests in flight, oldest first, on memjs's clock (utils.timestamp). */
  readonly requestTimeouts: readonly number[];
  /** Destroys the socket and fails every request in flight on it with `error`. */
  error(error: Error): void;
}

/** Sockets memjs opened for one client and that are not closed yet (see trackSockets). */
const openSockets = new WeakMap<memjs.Client, Set<Socket>>();

function serversOf(client: memjs.Client): MemjsServer[] {
  return (client as unknown as { servers: MemjsServer[] }).servers;
}

/**
 * Keeps memjs's sockets from outliving their use, for a client the backend owns. memjs keeps one
 * socket per server, and after a request timeout it ends that socket and opens a new one. The old
 * socket's 'close' and 'error' handlers still act on the server's CURRENT socket: 'close' clears
 * the server's socket field (so the new socket stayed open, referenced by nobody, and the next
 * request opened a third: one idle connection left behind per timeout), and 'error' destroys the
 * current socket and fails every request in flight on it. Found by the conformance case "frozen
 * server during acquire", which checks every handle the client opened: a TCP socket outlived close().
 * Here those two handlers run only while their socket is still the server's current one, and every
 * socket is recorded so that closeHard can end them all.
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
      if (made === undefined || made === before) return;
      for (const event of ['close', 'error'] as const) onlyWhileCurrent(made, event, this);
      open.add(made);
      made.once('close', () => open.delete(made));
    };
  }
}

/** Wraps memjs's listeners of `event` on `socket` (those there right after memjs made it) to act only while it is `server`'s current socket. */
function onlyWhileCurrent(socket: Socket, event: 'close' | 'error', server: MemjsServer): void {
  for (const listener of socket.listeners(event) as ((...args: unknown[]) => void)[]) {
    socket.removeListener(event, listener);
    // A stale socket's error is dropped: it was ended already, and nothing waits on it.
    socket.on(event, function (this: Socket, ...args: unknown[]) {
      if (server._socket === socket) listener.apply(this, args);
    });
  }
}

/** memjs's clock (utils.timestamp): the process's monotonic time in ms, not Date.now. */
function memjsNow(): number {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1000 + Math.round(nanoseconds / 1e6);
}

/** A request written this much after its call started still counts as having waited the whole timeout. */
const writeSlackMs = 50;

/**
 * Drops each connection of `client` whose oldest unanswered request has waited its whole timeout:
 * its requests fail at once (BackendUnavailableError) and the next one connects again. Called when a
 * call's deadline passes with no answer. memjs times a request out with the socket's idle timeout,
 * which every new request restarts: a connection that went silent (a server behind a restarted
 * container's port forwarder, a NAT that forgot it) while calls kept coming more often than the
 * timeout was never dropped, and every call on it timed out, for good.
 */
export function dropSilentSockets(client: memjs.Client): void {
  const now = memjsNow();
  for (const server of serversOf(client)) {
    const oldest = server.requestTimeouts[0];
    if (server._socket !== undefined && oldest !== undefined && oldest <= now + writeSlackMs) {
      server.error(new Error('no answer within the timeout: the connection is dropped and made again'));
    }
  }
}

/** How many sockets memjs has open for `client` (tests). */
export function openSocketCount(client: memjs.Client): number {
  return openSockets.get(client)?.size ?? 0;
}

/** memjs's close() only half-closes its current sockets (socket.end()); destroy every one it opened, so none outlives close(). */
export function closeHard(client: memjs.Client): void {
  for (const server of serversOf(client)) server._socket?.destroy();
  for (const socket of openSockets.get(client) ?? []) socket.destroy();
  openSockets.delete(client);
  client.close();
}
