import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { RedisNodeAddress, ResolvedRedisOptions } from './options.js';
import { defineScripts } from './lua.js';

/**
 * ioredis settings that make a dead or frozen server fail fast instead of hanging:
 * - lazyConnect: a factory must not do I/O; the first command connects.
 * - commandTimeout: every command, queued offline or sent, rejects after the deadline (frozen server).
 * - maxRetriesPerRequest 0: when a connection attempt fails, queued commands are rejected at once
 *   instead of waiting for reconnections (refused connection: an answer in milliseconds).
 * - connectTimeout: a silent host (no RST) does not stall a connect longer than one command deadline.
 * Commands still queue while a connection is being (re)established, so the first command works.
 */
export function connectionOptions(options: ResolvedRedisOptions, commandTimeoutMs: number): RedisOptions {
  return {
    lazyConnect: true,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(commandTimeoutMs, 500),
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true,
    // Reconnect quickly but not in a tight loop while a server is down.
    retryStrategy: (attempt: number) => Math.min(50 * attempt, 1_000),
    ...(options.username !== undefined ? { username: options.username } : {}),
    ...(options.password !== undefined ? { password: options.password } : {}),
    ...(options.db !== 0 ? { db: options.db } : {}),
    ...(options.tls ? { tls: {} } : {}),
  };
}

/** A connection plus whether we opened it (and so must close it). */
export interface OwnedConnection<T extends Redis | Cluster = Redis | Cluster> {
  readonly connection: T;
  readonly owned: boolean;
}

/** The last connection-level error of each connection (ECONNREFUSED, ENOTFOUND, WRONGPASS...). */
const lastErrors = new WeakMap<Redis | Cluster, { readonly error: Error; readonly at: number }>();

/**
 * Quiet 'error' events (failures reach callers as rejected commands; an unhandled event would only
 * log noise), but remember the last one: with maxRetriesPerRequest 0 a command on a connection that
 * cannot connect fails with "Reached the max retries per request limit", and the reason is here.
 */
function silence<T extends Redis | Cluster>(connection: T): T {
  connection.on('error', (error: Error) => lastErrors.set(connection, { error, at: Date.now() }));
  return connection;
}

/** The most recent connection error among `connections`, if any. */
export function lastConnectionError(connections: readonly (Redis | Cluster)[]): Error | undefined {
  let latest: { readonly error: Error; readonly at: number } | undefined;
  for (const connection of connections) {
    const entry = lastErrors.get(connection);
    if (entry !== undefined && (latest === undefined || entry.at > latest.at)) latest = entry;
  }
  return latest?.error;
}

export function openNode(node: RedisNodeAddress, options: ResolvedRedisOptions, commandTimeoutMs = options.commandTimeoutMs): Redis {
  return silence(new Redis({ ...connectionOptions(options, commandTimeoutMs), host: node.host, port: node.port }));
}

/**
 * The master behind Redis Sentinel: ioredis asks the Sentinels for the master's address, connects,
 * checks its role, and asks again whenever the connection drops (a failover).
 */
function openBehindSentinel(options: ResolvedRedisOptions): Redis {
  return silence(
    new Redis({
      ...connectionOptions(options, options.commandTimeoutMs),
      sentinels: options.nodes.map((node) => ({ host: node.host, port: node.port })),
      name: options.sentinel,
      ...(options.sentinelPassword !== undefined ? { sentinelPassword: options.sentinelPassword } : {}),
      ...(options.tls ? { enableTLSForSentinelMode: true } : {}),
      // Sentinels down: keep asking, as for a master that is down, but not in a tight loop.
      sentinelRetryStrategy: (attempt: number) => Math.min(50 * attempt, 1_000),
    }),
  );
}

/** The command connection of the single-server and Cluster modes. */
export function openCommandConnection(options: ResolvedRedisOptions): OwnedConnection {
  if (options.client !== undefined) {
    defineScripts(options.client);
    return { connection: options.client, owned: false };
  }
  const connection = options.cluster
    ? silence(
        new Cluster(
          options.nodes.map((node) => ({ host: node.host, port: node.port })),
          {
            lazyConnect: true,
            redisOptions: connectionOptions(options, options.commandTimeoutMs),
            enableOfflineQueue: true,
            clusterRetryStrategy: (attempt: number) => Math.min(100 * attempt, 1_000),
          },
        ),
      )
    : options.sentinel !== undefined
      ? openBehindSentinel(options)
      : openNode(options.nodes[0] ?? { host: '127.0.0.1', port: 6379 }, options);
  defineScripts(connection);
  return { connection, owned: true };
}

/** RedLock's masters: the given clients, or one connection per node. */
export function openMasters(options: ResolvedRedisOptions): OwnedConnection<Redis>[] {
  if (options.clients !== undefined) {
    return options.clients.map((client) => {
      defineScripts(client);
      return { connection: client, owned: false };
    });
  }
  return options.nodes.map((node) => {
    const connection = openNode(node, options);
    defineScripts(connection);
    return { connection, owned: true };
  });
}

/** Closes politely (QUIT) when connected, at once otherwise; never waits past `timeoutMs`. */
export async function closeConnection(connection: Redis | Cluster, timeoutMs: number): Promise<void> {
  if (connection.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      connection.quit().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }
  connection.disconnect();
}
