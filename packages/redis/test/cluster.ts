import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type ServerHandle } from '@deadbolt/conformance/servers';
import { Redis } from 'ioredis';

/** A 3-master Redis Cluster (no replicas), built by hand: ADDSLOTSRANGE per node, then MEET. */
export interface RedisCluster {
  readonly nodes: readonly string[];
  stop(): Promise<void>;
}

/**
 * The cluster as a ServerHandle for the conformance suite. Fault injection is not built for it
 * (restart/pause/down reject), so the suite's fault cases belong to the single-server runs.
 */
export function clusterHandle(cluster: RedisCluster): ServerHandle {
  const [host = '127.0.0.1', port = '0'] = (cluster.nodes[0] ?? '').split(':');
  const unsupported = async (): Promise<void> => {
    throw new Error('fault injection is not implemented for the hand-built Redis Cluster');
  };
  return {
    kind: 'redis',
    provider: 'process',
    host,
    port: Number(port),
    url: `redis://${host}:${port}?cluster=true`,
    stop: () => cluster.stop(),
    restart: unsupported,
    pause: unsupported,
    resume: unsupported,
    down: unsupported,
    up: unsupported,
    [Symbol.asyncDispose]: () => cluster.stop(),
  };
}

const ranges: readonly [number, number][] = [
  [0, 5460],
  [5461, 10922],
  [10923, 16383],
];

export async function startRedisCluster(): Promise<RedisCluster> {
  const host = '127.0.0.1';
  const dir = mkdtempSync(join(tmpdir(), 'deadbolt-redis-cluster-'));
  const processes: ChildProcess[] = [];
  const admins: Redis[] = [];
  const stop = async (): Promise<void> => {
    for (const admin of admins.splice(0)) admin.disconnect();
    await Promise.all(
      processes.splice(0).map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ports: number[] = [];
    for (let index = 0; index < ranges.length; index += 1) {
      const port = await freePort(host);
      ports.push(port);
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          host,
          '--dir',
          dir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        { stdio: 'ignore' },
      );
      processes.push(child);
    }
    for (const port of ports) {
      const admin = new Redis({ host, port, retryStrategy: (attempt) => Math.min(attempt * 20, 200), maxRetriesPerRequest: null });
      admin.on('error', () => undefined);
      admins.push(admin);
    }
    await Promise.all(
      admins.map((admin, index) => admin.call('CLUSTER', 'ADDSLOTSRANGE', String(ranges[index]![0]), String(ranges[index]![1]))),
    );
    for (const port of ports.slice(1)) await admins[0]!.call('CLUSTER', 'MEET', host, String(port));
    const deadline = Date.now() + 30_000;
    for (const [index, admin] of admins.entries()) {
      let metAt = Date.now();
      for (;;) {
        const info = String(await admin.call('CLUSTER', 'INFO'));
        const known = String(await admin.call('CLUSTER', 'NODES'))
          .trim()
          .split('\n').length;
        if (info.includes('cluster_state:ok') && known === ports.length) break;
        if (Date.now() > deadline) throw new Error(`redis cluster did not form: ${info}`);
        // A MEET handshake can be lost (a CI run saw a node that knew 2 of 3 for 30 s): meet the
        // others again from this node; MEET of a known node is harmless.
        if (known < ports.length && Date.now() - metAt > 1_000) {
          metAt = Date.now();
          for (const port of ports.filter((_, other) => other !== index)) await admin.call('CLUSTER', 'MEET', host, String(port));
        }
        await new Promise((resolve) => setTimeout(resolve, 50)); // gossip has no event to wait on
      }
    }
    for (const admin of admins.splice(0)) admin.disconnect();
    return { nodes: ports.map((port) => `${host}:${port}`), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
