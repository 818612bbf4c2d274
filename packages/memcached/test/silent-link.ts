import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP relay whose open connections can go silent for good while new ones still work: what
 * a client sees when a NAT forgets its connection, or when a restarted container's port forwarder
 * keeps the old connection open. silence() stops relaying on every connection open now, both ways,
 * without closing anything (bytes sent into it vanish); connections made later are relayed.
 */
export async function startSilentLink(target: { host: string; port: number }): Promise<{
  port: number;
  silence(): void;
  /** Connections the relay has accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}> {
  const sockets = new Set<Socket>();
  const silenced = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted += 1;
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      if (!silenced.has(client)) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!silenced.has(client)) client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('silent link: no port');
  return {
    port: address.port,
    silence() {
      for (const socket of sockets) silenced.add(socket);
    },
    get accepted() {
      return accepted;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
