import { requireBinary } from './binaries.js';
import { chooseProvider, readyOrStop, startAllOrNone, stopAll } from './choose.js';
import { ContainerServer } from './container-server.js';
import { createNetwork } from './network.js';
import { freePort } from './ports.js';
import { probeRedis, probeRedisReplica, redisCommand } from './probes.js';
import { ProcessServer } from './process-server.js';
import { makeServerDir } from './temp-dir.js';
import type { StartedNetwork } from 'testcontainers';
import type { RedisPrimaryReplica, RedisStartOptions, ServerHandle } from './types.js';

/**
 * Both providers run Redis without persistence (no RDB snapshot, no AOF), so a restart comes
 * back empty: the RedLock "node restarts without persistence" case. Pass
 * `args: ['--appendonly', 'yes']` for a Redis that keeps its data.
 */
const noPersistence = ['--save', '', '--appendonly', 'no'];
/** A replica's full sync starts at once instead of after Redis 7's default 5 s batching delay. */
const promptReplication = ['--repl-diskless-sync-delay', '0'];
const defaultReadyMs = 30_000;

type Probe = (host: string, port: number, timeoutMs: number) => Promise<boolean>;

/** What distinguishes a primary from a replica when starting one. */
interface Role {
  readonly args: readonly string[];
  readonly probe: Probe;
  readonly network?: { readonly network: StartedNetwork; readonly alias: string };
}

const primaryRole: Role = { args: [], probe: probeRedis };

/** One Redis server. */
export async function startRedis(options?: RedisStartOptions): Promise<ServerHandle> {
  return (await chooseProvider(options)) === 'container' ? containerRedis(options, primaryRole) : processRedis(options, primaryRole);
}

/** `count` independent Redis masters (RedLock's N nodes), started in parallel. */
export async function startRedisMasters(count: number, options?: RedisStartOptions): Promise<ServerHandle[]> {
  if (!Number.isInteger(count) || count < 1) throw new Error(`startRedisMasters: count must be a positive integer, not ${count}`);
  const provider = await chooseProvider(options);
  return startAllOrNone(Array.from({ length: count }, () => startRedis({ ...options, provider })));
}

/**
 * A primary and one replica (REPLICAOF), returned once the replication link is up and the first
 * sync is done. In containers both join one user network and the replica follows the primary by
 * its alias, so the link survives the primary's restart.
 */
export async function startRedisPrimaryReplica(options?: RedisStartOptions): Promise<RedisPrimaryReplica> {
  if ((await chooseProvider(options)) === 'process') {
    const primary = await processRedis(options, primaryRole);
    try {
      const replica = await processRedis(options, { args: ['--replicaof', primary.host, String(primary.port)], probe: probeRedisReplica });
      return pair(primary, replica, async () => undefined);
    } catch (error) {
      await primary.stop();
      throw error;
    }
  }
  const owned = await createNetwork();
  try {
    const network = owned.network;
    const primary = await containerRedis(options, { ...primaryRole, network: { network, alias: 'primary' } });
    try {
      const replica = await containerRedis(options, {
        args: ['--replicaof', 'primary', '6379'],
        probe: probeRedisReplica,
        network: { network, alias: 'replica' },
      });
      return pair(primary, replica, owned.remove);
    } catch (error) {
      await primary.stop();
      throw error;
    }
  } catch (error) {
    await owned.remove();
    throw error;
  }
}

function pair(primary: ServerHandle, replica: ServerHandle, cleanup: () => Promise<void>): RedisPrimaryReplica {
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= stopAll([replica, primary]).finally(cleanup);
    return stopping;
  };
  return {
    primary,
    replica,
    async promote() {
      const reply = await redisCommand(replica.host, replica.port, 'REPLICAOF NO ONE', 5_000);
      if (reply !== '+OK\r\n') throw new Error(`REPLICAOF NO ONE on ${replica.url} answered ${JSON.stringify(reply)}`);
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

async function processRedis(options: RedisStartOptions | undefined, role: Role): Promise<ServerHandle> {
  const command = requireBinary('redisServer');
  const host = '127.0.0.1';
  const port = await freePort(host);
  const dir = makeServerDir('redis');
  const server = new ProcessServer({
    kind: 'redis',
    command,
    args: [
      '--port',
      String(port),
      '--bind',
      host,
      '--dir',
      dir,
      '--daemonize',
      'no',
      ...noPersistence,
      ...promptReplication,
      ...role.args,
      ...(options?.args ?? []),
    ],
    host,
    port,
    url: `redis://${host}:${port}`,
    dir,
    probe: (timeoutMs) => role.probe(host, port, timeoutMs),
    readyTimeoutMs: options?.readyTimeoutMs ?? defaultReadyMs,
  });
  server.spawnProcess();
  return readyOrStop(server);
}

async function containerRedis(options: RedisStartOptions | undefined, role: Role): Promise<ServerHandle> {
  const server = await ContainerServer.create({
    kind: 'redis',
    image: 'redis:7',
    containerPort: 6379,
    command: ['redis-server', ...noPersistence, ...promptReplication, ...role.args, ...(options?.args ?? [])],
    ...(role.network !== undefined ? { network: role.network } : {}),
    url: (host, port) => `redis://${host}:${port}`,
    probe: role.probe,
    readyTimeoutMs: options?.readyTimeoutMs ?? defaultReadyMs,
  });
  return readyOrStop(server);
}
