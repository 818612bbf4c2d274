import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP relay that delays every client-to-server chunk by a fixed latency (in order). Put
 * in front of one client, it widens the window between that client's GET answer and its next
 * request, so other clients' operations land inside it: a real network delay, not a mock.
 */
export async function startSlowLink(
  target: { host: string; port: number },
  latencyMs: number,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    let chain = Promise.resolve();
    client.on('data', (chunk) => {
      chain = chain.then(
        () =>
          new Promise<void>((resolve) =>
            setTimeout(() => {
              upstream.write(chunk);
              resolve();
            }, latencyMs),
          ),
      );
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('slow link: no port');
  return {
    port: address.port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
