import { connect } from 'node:net';

/**
 * Raw protocol probes: one short TCP exchange each, no client library. They tell "the server
 * answers its protocol" from "a port is open" (a container's published port accepts connections
 * before the server inside listens; PostgreSQL accepts them while it is still starting up).
 */

/**
 * Sends `request` and collects the reply until `complete(reply)` is true, the peer closes, or
 * `timeoutMs` passes. Never rejects: a refused connection or a timeout resolves to `undefined`
 * (`'timeout'` is distinguished so a paused server can be told from a stopped one).
 */
export function exchange(
  host: string,
  port: number,
  request: Buffer | string,
  complete: (reply: Buffer) => boolean,
  timeoutMs = 1_000,
): Promise<Buffer | 'timeout' | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host, port });
    const finish = (result: Buffer | 'timeout' | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const reply = Buffer.concat(chunks);
      if (complete(reply)) finish(reply);
    });
    socket.on('error', () => finish(undefined));
    socket.on('close', () => finish(chunks.length > 0 ? Buffer.concat(chunks) : undefined));
  });
}

const lineComplete = (reply: Buffer): boolean => reply.includes('\r\n');

/** Sends one inline Redis command and returns the raw reply (RESP), or undefined. */
export async function redisCommand(host: string, port: number, command: string, timeoutMs = 1_000): Promise<string | undefined> {
  const reply = await exchange(host, port, `${command}\r\n`, respComplete, timeoutMs);
  return typeof reply === 'object' ? reply.toString('utf8') : undefined;
}

/** True when the buffer holds one whole RESP reply (simple, error, integer or bulk string). */
function respComplete(reply: Buffer): boolean {
  if (!lineComplete(reply)) return false;
  if (reply[0] !== 0x24 /* $ */) return true;
  const header = reply.subarray(0, reply.indexOf('\r\n')).toString('latin1');
  const length = Number(header.slice(1));
  return length < 0 || reply.length >= header.length + 2 + length + 2;
}

/** PING answered with PONG (not -LOADING, not -MASTERDOWN). */
export async function probeRedis(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return (await redisCommand(host, port, 'PING', timeoutMs)) === '+PONG\r\n';
}

/** A replica is ready when its link to the primary is up and the initial sync has finished. */
export async function probeRedisReplica(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  const info = await redisCommand(host, port, 'INFO replication', timeoutMs);
  return info?.includes('master_link_status:up') === true && info.includes('master_sync_in_progress:0');
}

/** memcached's text protocol: `version` answered with `VERSION x.y.z`. */
export async function probeMemcached(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  const reply = await exchange(host, port, 'version\r\n', lineComplete, timeoutMs);
  return typeof reply === 'object' && reply.toString('latin1').startsWith('VERSION ');
}

/**
 * PostgreSQL: a v3 StartupMessage. An `R` (authentication request) means the postmaster accepts
 * sessions; an `E` (e.g. 57P03 "the database system is starting up") means not yet. We hang up
 * before authenticating, so no password is needed. Message layout: PostgreSQL docs, "Message Formats".
 */
export async function probePostgres(host: string, port: number, user: string, database: string, timeoutMs = 1_000): Promise<boolean> {
  const body = Buffer.from(`user\0${user}\0database\0${database}\0\0`, 'utf8');
  const message = Buffer.alloc(8 + body.length);
  message.writeInt32BE(message.length, 0);
  message.writeInt32BE(196_608, 4); // protocol 3.0
  body.copy(message, 8);
  const reply = await exchange(host, port, message, (r) => r.length >= 1, timeoutMs);
  return typeof reply === 'object' && reply[0] === 0x52; /* R */
}

/** ZooKeeper's `srvr` four-letter word: the raw report, or undefined if there is none. */
export async function zooKeeperSrvr(host: string, port: number, timeoutMs = 1_000): Promise<string | undefined> {
  // The server closes the connection after a four-letter word's answer.
  const reply = await exchange(host, port, 'srvr', () => false, timeoutMs);
  return typeof reply === 'object' ? reply.toString('utf8') : undefined;
}

/** The `Mode:` line of `srvr` (standalone, leader, follower), or undefined while not serving. */
export async function zooKeeperMode(host: string, port: number, timeoutMs = 1_000): Promise<string | undefined> {
  const report = await zooKeeperSrvr(host, port, timeoutMs);
  return report === undefined ? undefined : /^Mode: (\w+)/m.exec(report)?.[1];
}

/** Serving requests: standalone, or a member of a formed quorum. */
export async function probeZooKeeper(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  const mode = await zooKeeperMode(host, port, timeoutMs);
  return mode === 'standalone' || mode === 'leader' || mode === 'follower';
}

/**
 * etcd's `GET /health` on the client port: `{"health":"true"}` once the member has a leader and
 * serves reads (a member of a cluster without quorum answers `"false"`).
 */
export async function probeEtcd(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  const request = `GET /health HTTP/1.1\r\nHost: ${host}:${port}\r\nConnection: close\r\n\r\n`;
  const reply = await exchange(host, port, request, (r) => r.includes('}'), timeoutMs);
  return typeof reply === 'object' && /"health"\s*:\s*"true"/.test(reply.toString('utf8'));
}
