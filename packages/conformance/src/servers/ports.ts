import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Where server processes listen: above the well-known and common service ports, below the ephemeral range. */
const LOWEST_PORT = 10_000;

/**
 * The kernel's ephemeral range: the source ports of outgoing connections. A server port inside it
 * goes wrong in two ways while the server is down (the fault cases stop and restart servers): a
 * client reconnecting to it may be given that same port as its source and connect to itself (TCP
 * simultaneous open: seen in 2 of 10 probes right after a server was killed), reading its own
 * commands as the server's replies; and any connection of the machine may take it as a source
 * port, so the restart on the same address fails with EADDRINUSE.
 */
function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return low !== undefined && Number.isInteger(low) ? low : 32_768;
  } catch {
    return 32_768; // Linux's default; other systems keep theirs higher still
  }
}

/** Listens on `port` (0: the kernel picks) and closes at once: the port bound, or undefined when taken. */
function listensOn(host: string, port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.on('error', () => resolve(undefined));
    server.listen({ host, port, exclusive: true }, () => {
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A port that was free a moment ago, for a server process of ours or for a "nothing listens there"
 * address: below the ephemeral range (see ephemeralLow), picked at random so that parallel test
 * processes rarely try the same one. Fixtures keep that port for the server's whole life, so a
 * restart comes back on the same address (a client's reconnect logic is what the fault cases test).
 * Where the ephemeral range leaves no room below it, the kernel picks.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const highest = ephemeralLow() - 1;
  if (highest - LOWEST_PORT >= 1_000) {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const port = await listensOn(host, LOWEST_PORT + randomInt(highest - LOWEST_PORT + 1));
      if (port !== undefined) return port;
    }
  }
  return kernelPickedPort(host);
}

/**
 * A free port as the kernel picks it (in the ephemeral range), for ports a container runtime
 * publishes (`host` '0.0.0.0'). Containers keep the kernel's pick: with a port below the range, on
 * this project's CI sandbox (gVisor, podman) a stopped container's published port answered
 * connections ("HTTP/1.1 400 Bad Request" to a Redis PING, a ZooKeeper probe timed out) instead of
 * refusing them, and every down/restart case of the container path failed. The cause was not found.
 */
export async function kernelPickedPort(host = '127.0.0.1'): Promise<number> {
  const port = await listensOn(host, 0);
  if (port === undefined || port === 0) throw new Error(`no free port on ${host}`);
  return port;
}

/** Distinct free ports (two picks may land on the same one: a Set dedups). */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort(host));
  return [...ports];
}
