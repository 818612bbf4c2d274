import { createServer } from 'node:net';

/**
 * A port that was free a moment ago: the kernel picks it for a listener on port 0, which we close
 * at once. Fixtures then keep that port for the server's whole life, so a restart comes back on
 * the same address (a client's reconnect logic is what the fault cases test).
 * `host` '0.0.0.0' for ports a container runtime publishes on every interface.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

/** Distinct free ports (the kernel may hand the same one out twice in a row: a Set dedups). */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort(host));
  return [...ports];
}
