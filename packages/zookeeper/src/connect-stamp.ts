import type { Client } from 'node-zookeeper-client';

/** node-zookeeper-client's private connection state (1.1.3, ConnectionManager): what sends the ConnectRequest. */
interface Connector {
  onSocketConnected(this: Connector): void;
}

interface WithConnector {
  readonly connectionManager?: Connector;
}

/**
 * Notes when `client` sends each ConnectRequest (the library writes it as its socket connects).
 * When the session is (re)established, that is the moment the server last certainly heard from us:
 * the arrival of its answer is not, since after a stall the answer may have waited in the socket
 * for longer than the session timeout. As in whole-frames.ts, the library binds its handler at each
 * connect, so an own property set before connect() is the one used. Returns the last stamp
 * (undefined when the library does not expose the handler: the caller then uses the arrival time).
 */
export function stampConnects(client: Client): () => number | undefined {
  const manager = (client as unknown as WithConnector).connectionManager;
  if (manager === undefined || typeof manager.onSocketConnected !== 'function') return () => undefined;
  const connected = manager.onSocketConnected;
  let sentAt: number | undefined;
  manager.onSocketConnected = function (this: Connector): void {
    sentAt = Date.now();
    connected.call(this);
  };
  return () => sentAt;
}
