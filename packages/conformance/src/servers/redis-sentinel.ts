import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireBinary } from './binaries.js';
import { readyOrStop, stopAll } from './choose.js';
import { freePort } from './ports.js';
import { probeRedis } from './probes.js';
import { ProcessServer } from './process-server.js';
import { startRedis } from './redis.js';
import { makeServerDir } from './temp-dir.js';
import type { RedisSentinelSet, RedisStartOptions } from './types.js';

const masterName = 'deadbolt-master';

/**
 * A Redis master watched by one Sentinel (`redis-server <conf> --sentinel`, the same binary: Debian's
 * redis-sentinel package is only a wrapper around it). Sentinel rewrites its config file, so each
 * run writes its own into the server's temp dir. Both run as server processes whichever provider
 * DEADBOLT_SERVERS names: a containerised Sentinel would announce the master by an address only the
 * container network resolves, which a client on the host cannot reach without a NAT map.
 */
export async function startRedisSentinel(options?: RedisStartOptions): Promise<RedisSentinelSet> {
  const master = await startRedis({ ...options, provider: 'process' });
  try {
    const host = '127.0.0.1';
    const port = await freePort(host);
    const dir = makeServerDir('redis-sentinel');
    const config = join(dir, 'sentinel.conf');
    writeFileSync(
      config,
      [
        `port ${port}`,
        `bind ${host}`,
        `dir ${dir}`,
        `sentinel monitor ${masterName} ${master.host} ${master.port} 1`,
        `sentinel down-after-milliseconds ${masterName} 1000`,
        `sentinel failover-timeout ${masterName} 5000`,
        '',
      ].join('\n'),
    );
    const sentinel = new ProcessServer({
      kind: 'redis',
      command: requireBinary('redisServer'),
      args: [config, '--sentinel'],
      host,
      port,
      url: `redis+sentinel://${host}:${port}?sentinel=${masterName}`,
      dir,
      probe: (timeoutMs) => probeRedis(host, port, timeoutMs),
      readyTimeoutMs: options?.readyTimeoutMs ?? 30_000,
    });
    sentinel.spawnProcess();
    await readyOrStop(sentinel);
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= stopAll([sentinel, master]);
      return stopping;
    };
    return { master, sentinel, masterName, url: sentinel.url, stop, [Symbol.asyncDispose]: stop };
  } catch (error) {
    await master.stop();
    throw error;
  }
}
