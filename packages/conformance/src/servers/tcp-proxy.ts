/**
 * An in-process TCP proxy a test or the compare harness puts between one client and one server, so
 * it can cut that link alone (a network partition, or a refused link) or point it somewhere else (a
 * failover behind a virtual IP), while every other client keeps its direct connection.
 *
 * A partition must look to both ends like a real one: bytes are neither delivered nor refused,
 * and nobody is told. So partition() pauses every socket (the kernel buffers what was sent, as
 * TCP does while it retransmits), and closes seen on one side are not passed on until heal().
 * Connections made during a partition are accepted but not forwarded: the upstream connection is
 * opened at heal(), like a SYN retransmitted until the path comes back.
 */
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly host: string;
  readonly port: number;
  /** `host:port` of the proxy, to put in a URL in place of the server's. */
  readonly address: string;
  /** Replaces `targetHost:targetPort` in `url` with the proxy's address. */
  rewrite(url: string): string;
  /** New connections go to host:port; existing ones are dropped (both ends closed). */
  retarget(host: string, port: number): void;
  /** Stops forwarding in both directions on existing and new connections, silently. */
  partition(): void;
  /**
   * Drops every connection (both ends closed, as a reset would) and refuses new ones until heal():
   * a client cut off for certain, that sees its connections die and cannot come back.
   */
  cut(): void;
  /** Forwards (and accepts) again: what was sent meanwhile is delivered, deferred closes happen. */
  heal(): void;
  /**
   * The connections open now go silent for good: bytes sent either way vanish and nothing is closed,
   * while new connections are forwarded. What a client sees when a NAT or firewall forgets its
   * connection, or a restarted container's port forwarder keeps the old one.
   */
  strand(): void;
  readonly partitioned: boolean;
  /** Open client-side connections (for tests that check nothing leaks). */
  readonly connections: number;
  /** Closes the listener and every connection. Idempotent. */
  close(): Promise<void>;
}

/** One client connection and, once opened, its upstream connection. */
interface Link {
  readonly client: Socket;
  upstream: Socket | undefined;
  /** Chunks read just as the partition began (a 'data' event already under way), sent at heal. */
  readonly held: { readonly to: 'client' | 'upstream'; readonly chunk: Buffer }[];
  closed: boolean;
  /** strand(): nothing passes any more, in either direction, not even a close. */
  stranded: boolean;
}

export async function startProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let target = { host: targetHost, port: targetPort };
  let partitioned = false;
  let refusing = false;
  let closing: Promise<void> | undefined;
  const links = new Set<Link>();
  /** Work that would tell one end about the other (closes, upstream connects): waits for heal. */
  let deferred: (() => void)[] = [];
  const whenConnected = (fn: () => void): void => {
    if (partitioned) deferred.push(fn);
    else fn();
  };

  const forget = (link: Link): void => {
    link.closed = true;
    links.delete(link);
  };
  const drop = (link: Link): void => {
    if (link.closed) return;
    link.closed = true;
    links.delete(link);
    link.client.destroy();
    link.upstream?.destroy();
  };

  /** Copies from → to by hand (not pipe(): pipe resumes a source on 'drain', undoing a partition). */
  const forward = (link: Link, from: Socket, to: Socket, toName: 'client' | 'upstream'): void => {
    from.on('data', (chunk: Buffer) => {
      if (link.stranded) return;
      if (partitioned) {
        link.held.push({ to: toName, chunk });
        from.pause();
        return;
      }
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => {
          if (!partitioned && !link.closed) from.resume();
        });
      }
    });
    // A close on one side reaches the other only over a working path. A clean close is passed on
    // as a FIN after what was already written (a destroy would throw away a last reply); an error
    // as an abrupt close.
    from.on('end', () => {
      if (!link.stranded) whenConnected(() => to.end());
    });
    from.on('error', () => {
      if (!link.stranded) whenConnected(() => drop(link));
    });
    from.on('close', () =>
      whenConnected(() => {
        if (link.stranded) return;
        to.end();
        if (link.client.destroyed && link.upstream?.destroyed !== false) forget(link);
      }),
    );
  };

  const connectUpstream = (link: Link): void => {
    if (link.closed) return;
    const upstream = createConnection({ host: target.host, port: target.port });
    link.upstream = upstream;
    upstream.setNoDelay(true);
    forward(link, link.client, upstream, 'upstream');
    forward(link, upstream, link.client, 'client');
    link.client.resume();
  };

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    if (refusing) return void client.destroy();
    client.setNoDelay(true);
    const link: Link = { client, upstream: undefined, held: [], closed: false, stranded: false };
    links.add(link);
    // Until forwarding starts, a client that goes away just goes away.
    client.once('close', () => {
      if (!link.upstream) drop(link);
    });
    client.on('error', () => undefined);
    whenConnected(() => connectUpstream(link));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = '127.0.0.1';

  return {
    host,
    port,
    address: `${host}:${port}`,
    get partitioned() {
      return partitioned;
    },
    get connections() {
      return links.size;
    },
    rewrite(url) {
      const from = `${targetHost}:${targetPort}`;
      if (!url.includes(from)) throw new Error(`${url} does not name ${from}`);
      return url.replace(from, `${host}:${port}`);
    },
    retarget(newHost, newPort) {
      target = { host: newHost, port: newPort };
      for (const link of [...links]) drop(link);
    },
    partition() {
      partitioned = true;
      for (const link of links) {
        link.client.pause();
        link.upstream?.pause();
      }
    },
    cut() {
      refusing = true;
      for (const link of [...links]) drop(link);
    },
    heal() {
      refusing = false;
      if (!partitioned) return;
      partitioned = false;
      for (const link of links) {
        for (const { to, chunk } of link.held.splice(0)) (to === 'client' ? link.client : link.upstream)?.write(chunk);
        if (link.upstream) {
          link.client.resume();
          link.upstream.resume();
        }
      }
      const pending = deferred;
      deferred = [];
      for (const fn of pending) fn();
    },
    strand() {
      for (const link of links) link.stranded = true;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        deferred = [];
        for (const link of [...links]) drop(link);
        server.close(() => resolve());
      });
      return closing;
    },
  };
}
