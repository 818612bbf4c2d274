import { connect, type Socket } from 'node:net';

/**
 * The TCP connects of one etcd client's gRPC channels, made here so that close() can end them.
 * grpc-js has no connect timeout and keeps no handle on a connect under way: to a member whose SYNs
 * go unanswered (a host gone, a container being stopped), the socket stays open until the kernel
 * gives up on it (about two minutes on Linux), long after the client was closed. Seen in the suite
 * as a socket still open after a cluster restart, opened by a client already closed.
 */
export class OwnedConnects {
  private readonly connecting = new Set<Socket>();
  private closed = false;

  /** Puts our connect in place of the connector's own (proxied connects stay grpc-js's). */
  adopt(connector: Connector): void {
    const tcpConnect = connector.tcpConnect.bind(connector);
    connector.tcpConnect = (address, options) =>
      'grpc.http_connect_target' in options ? tcpConnect(address, options) : this.connect(address);
  }

  /** Ends every connect under way; a connect asked for after this fails at once. */
  close(): void {
    this.closed = true;
    for (const socket of this.connecting) socket.destroy();
    this.connecting.clear();
  }

  /** What grpc-js's own tcpConnect does without a proxy: resolve on connect, reject on close or error. */
  private connect(address: ConnectAddress): Promise<Socket> {
    if (this.closed) return Promise.reject(new Error('the etcd client is closed'));
    return new Promise((resolve, reject) => {
      const socket = connect(address, () => {
        this.connecting.delete(socket);
        socket.removeListener('close', closed);
        socket.removeListener('error', reject);
        resolve(socket);
      });
      const closed = (): void => {
        this.connecting.delete(socket);
        reject(new Error('Socket closed'));
      };
      this.connecting.add(socket);
      socket.once('close', closed);
      socket.once('error', reject);
    });
  }
}

/** A grpc-js subchannel address: TCP or a Unix socket. */
type ConnectAddress = { host: string; port: number } | { path: string };

/** The part of grpc-js's Http2SubchannelConnector that OwnedConnects replaces. */
export interface Connector {
  tcpConnect(address: ConnectAddress, options: Record<string, unknown>): Promise<Socket>;
}
