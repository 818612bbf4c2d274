import { exchange, redisCommand } from './probes.js';

/**
 * Server-side counters and faults for the conformance suite, over raw protocol (no client library):
 * how many commands a server has run (to prove that rejected bad input sent none), and killing
 * the clients' connections from the server side (a killed connection mid-hold).
 */

/** Redis: the sum of `calls=` over INFO commandstats. The INFO itself counts once it has run. */
export async function redisCommandCount(host: string, port: number): Promise<number> {
  const info = await redisCommand(host, port, 'INFO commandstats', 2_000);
  if (info === undefined) throw new Error(`redis at ${host}:${port} did not answer INFO commandstats`);
  let total = 0;
  for (const match of info.matchAll(/calls=(\d+)/g)) total += Number(match[1]);
  return total;
}

/** Redis: CLIENT KILL of every normal and pub/sub connection but this one. */
export async function redisKillClients(host: string, port: number): Promise<void> {
  for (const type of ['normal', 'pubsub']) await redisCommand(host, port, `CLIENT KILL TYPE ${type}`, 2_000);
}

/** memcached: the storage and retrieval commands it has run (`stats` itself is not counted). */
export async function memcachedCommandCount(host: string, port: number): Promise<number> {
  const reply = await exchange(host, port, 'stats\r\n', (r) => r.includes('END\r\n'), 2_000);
  if (typeof reply !== 'object') throw new Error(`memcached at ${host}:${port} did not answer stats`);
  const stats = new Map([...reply.toString('latin1').matchAll(/^STAT (\S+) (\d+)\r$/gm)].map((m) => [m[1]!, Number(m[2])]));
  const counted = [
    'cmd_get',
    'cmd_set',
    'cmd_touch',
    'cmd_flush',
    'delete_hits',
    'delete_misses',
    'incr_hits',
    'incr_misses',
    'decr_hits',
    'decr_misses',
    'cas_hits',
    'cas_misses',
    'cas_badval',
  ];
  return counted.reduce((sum, name) => sum + (stats.get(name) ?? 0), 0);
}

/** ZooKeeper: `mntr`'s zk_packets_received (four-letter words are not counted). */
export async function zooKeeperPacketsReceived(host: string, port: number): Promise<number> {
  const reply = await exchange(host, port, 'mntr', () => false, 2_000);
  const match = typeof reply === 'object' ? /^zk_packets_received\s+(\d+)/m.exec(reply.toString('utf8')) : null;
  if (!match) throw new Error(`zookeeper at ${host}:${port} did not answer mntr`);
  return Number(match[1]);
}

/**
 * PostgreSQL: the statements the server has run, summed over pg_stat_statements (the fixtures
 * preload it on both providers; updated when each statement ends, with no stats-flush delay as
 * pg_stat_database's transaction counts have). The fixtures speak no SCRAM, so `query` runs the SQL
 * on the caller's own client library (`pg`). Each count costs the same two statements (the
 * CREATE EXTENSION IF NOT EXISTS and the SELECT), which the suite's probe cost subtracts.
 */
export async function postgresStatementCount(query: (sql: string) => Promise<unknown>): Promise<number> {
  const results = await query(postgresStatementCountSql);
  const last = Array.isArray(results) ? results[results.length - 1] : results;
  const calls = (last as { rows?: { calls?: unknown }[] } | undefined)?.rows?.[0]?.calls;
  if (typeof calls !== 'string' && typeof calls !== 'number') throw new Error('postgres did not answer the pg_stat_statements count');
  return Number(calls);
}

const postgresStatementCountSql =
  'CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT coalesce(sum(calls), 0)::text AS calls FROM pg_stat_statements';

/**
 * etcd: gRPC calls started on the member (unary calls and streams), the sum of
 * `grpc_server_started_total` in its Prometheus `/metrics` on the client port.
 */
export async function etcdRequestCount(host: string, port: number): Promise<number> {
  // HTTP/1.0: no chunked encoding to cut lines apart, and the member closes after the whole page.
  const request = `GET /metrics HTTP/1.0\r\nHost: ${host}:${port}\r\n\r\n`;
  const reply = await exchange(host, port, request, () => false, 5_000);
  if (typeof reply !== 'object') throw new Error(`etcd at ${host}:${port} did not answer GET /metrics`);
  let total = 0;
  for (const match of reply.toString('utf8').matchAll(/^grpc_server_started_total\{[^}]*\} (\d+)$/gm)) total += Number(match[1]);
  return total;
}
