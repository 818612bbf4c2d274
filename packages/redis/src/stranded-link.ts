import type { Redis } from 'ioredis';

/**
 * Telling a stranded link from a frozen server, for the script commands (script-command.ts): which
 * sockets heard anything lately, and a probe on a fresh connection when one went silent.
 */

/** When each socket a script was written to last received anything (Date.now ms). */
const lastReadAt = new WeakMap<object, number>();
/** Connections whose link is being probed (at most one probe each). */
const probing = new WeakSet<Redis>();

interface ScriptSocket {
  on(event: 'data', listener: () => void): unknown;
  destroy(): void;
}

function isScriptSocket(socket: object): socket is ScriptSocket {
  return typeof (socket as Partial<ScriptSocket>).on === 'function' && typeof (socket as Partial<ScriptSocket>).destroy === 'function';
}

/** Notes, from now on, when `socket` receives anything (once per socket). */
export function watchReads(socket: object): void {
  if (lastReadAt.has(socket) || !isScriptSocket(socket)) return;
  lastReadAt.set(socket, Date.now());
  socket.on('data', () => lastReadAt.set(socket, Date.now()));
}

function silentFor(socket: object, ms: number): boolean {
  return Date.now() - (lastReadAt.get(socket) ?? 0) >= ms;
}

/**
 * A script got no answer within its timeout on `socket`, which has received nothing at all for that
 * long. ioredis times the command out but keeps the connection, and every later command goes into
 * the same socket until the kernel gives up on it (minutes: redis/ioredis#634; OpenCTI waited 15
 * minutes after a Kubernetes redeploy, OpenCTI-Platform/opencti#7970). Silence has two causes that
 * must be told apart: a server that is frozen (paused, swapping) runs the commands buffered on that
 * socket when it wakes, so dropping the socket would let an acquire run after its undo, sent on the
 * new connection; a stranded link (a NAT or firewall that forgot it, a restarted container's port
 * forwarder keeping the old one) never delivers them. So a fresh connection asks the server for a
 * PING: if the server answers it while our socket still hears nothing, the link is stranded and the
 * socket is destroyed (ioredis connects again); if not, the server is down or frozen, and nothing
 * changes. The probe ends when it is answered or times out, or when the connection ends.
 */
export function dropIfStranded(connection: Redis, socket: object | undefined, ms: number): void {
  if (socket === undefined || !isScriptSocket(socket) || !silentFor(socket, ms) || probing.has(connection)) return;
  probing.add(connection);
  const probe = connection.duplicate({
    lazyConnect: true,
    enableReadyCheck: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    commandTimeout: ms,
    connectTimeout: ms,
  });
  probe.on('error', () => undefined);
  const stop = (): void => probe.disconnect();
  connection.once('end', stop);
  probe
    .ping()
    .then(
      () => {
        if (connection.stream === socket && silentFor(socket, ms)) socket.destroy();
      },
      () => undefined,
    )
    .finally(() => {
      probing.delete(connection);
      connection.off('end', stop);
      probe.disconnect();
    });
}
