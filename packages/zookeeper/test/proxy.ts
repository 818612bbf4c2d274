import net from 'node:net';

/**
 * A TCP proxy in front of one server, so a test can cut one client off (and keep it off) while the
 * server and every other client carry on: how we end a session deterministically.
 */
export interface Proxy {
  readonly port: number;
  /** Drops every proxied connection and refuses new ones. */
  cut(): void;
  /** Accepts connections again. */
  heal(): void;
  /** A silent partition: nothing is forwarded either way, nothing is closed (no RST, no FIN). For good. */
  stall(): void;
  close(): Promise<void>;
}

export async function startProxy(host: string, port: number): Promise<Proxy> {
  const sockets = new Set<net.Socket>();
  let open = true;
  let stalled = false;
  const server = net.createServer((client) => {
    if (!open) return void client.destroy();
    if (stalled) return void client.pause();
    const upstream = net.connect(port, host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    heal: () => {
      open = true;
    },
    stall: () => {
      stalled = true;
      for (const socket of sockets) socket.pause();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
