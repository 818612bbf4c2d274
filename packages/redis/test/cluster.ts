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

/** Attempts at starting the cluster: a node that cannot bind its ports exits, and the next try picks others. */
const startAttempts = 3;
const formWithinMs = 30_000;

export async function startRedisCluster(): Promise<RedisCluster> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= startAttempts; attempt += 1) {
    try {
      return await startOnce();
    } catch (error) {
      lastError = error;
    }
  }
  throw new Error(`redis cluster: no start in ${startAttempts} attempts`, { cause: lastError });
}

/**
 * One try. Each node gets its client port and its cluster bus port from freePort (below the
 * ephemeral range): by default the bus is the port + 10000, which lands in that range, was never
 * checked, and a node that cannot bind it exits. A node that exits before the cluster forms fails
 * the try at once with its own last words; before this, the admin clients retried a dead node
 * forever and the suite's 120 s hook timeout was the only report (twice in three container CI runs).
 */
async function startOnce(): Promise<RedisCluster> {
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
  let forming = true;
  let exited!: (error: Error) => void;
  const anExit = new Promise<never>((_, reject) => (exited = reject));
  anExit.catch(() => undefined);
  try {
    const ports: number[] = [];
    const busPorts: number[] = [];
    for (let index = 0; index < ranges.length; index += 1) {
      const port = await freePort(host);
      const busPort = await freePort(host);
      ports.push(port);
      busPorts.push(busPort);
      // Redis logs to stdout: the last lines say why a node stopped (a port it could not bind).
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--cluster-port',
          String(busPort),
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
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let said = '';
      const hear = (chunk: Buffer): void => {
        said = (said + chunk.toString()).slice(-600);
      };
      child.stdout?.on('data', hear);
      child.stderr?.on('data', hear);
      child.once('exit', (code, signal) => {
        if (forming)
          exited(new Error(`redis cluster node on ${port} (bus ${busPort}) exited (${signal ?? code}) while forming: ${said.trim()}`));
      });
      processes.push(child);
    }
    for (const port of ports) {
      const admin = new Redis({ host, port, retryStrategy: (attempt) => Math.min(attempt * 20, 200), maxRetriesPerRequest: null });
      admin.on('error', () => undefined);
      admins.push(admin);
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`redis cluster did not form within ${formWithinMs} ms`)), formWithinMs);
    });
    try {
      await Promise.race([form(host, ports, busPorts, admins), anExit, late]);
    } finally {
      clearTimeout(timer);
    }
    forming = false;
    for (const admin of admins.splice(0)) admin.disconnect();
    return { nodes: ports.map((port) => `${host}:${port}`), stop };
  } catch (error) {
    forming = false;
    await stop();
    throw error;
  }
}

/** Slots to each node, MEET (with each bus port: not the default port + 10000), then wait until every node sees all three and the state is ok. */
async function form(host: string, ports: readonly number[], busPorts: readonly number[], admins: readonly Redis[]): Promise<void> {
  await Promise.all(
    admins.map((admin, index) => admin.call('CLUSTER', 'ADDSLOTSRANGE', String(ranges[index]![0]), String(ranges[index]![1]))),
  );
  const meet = (admin: Redis, index: number): Promise<unknown> =>
    admin.call('CLUSTER', 'MEET', host, String(ports[index]), String(busPorts[index]));
  for (let other = 1; other < ports.length; other += 1) await meet(admins[0]!, other);
  for (const [index, admin] of admins.entries()) {
    let metAt = Date.now();
    for (;;) {
      const info = String(await admin.call('CLUSTER', 'INFO'));
      const known = String(await admin.call('CLUSTER', 'NODES'))
        .trim()
        .split('\n').length;
      if (info.includes('cluster_state:ok') && known === ports.length) break;
      // A MEET handshake can be lost (a CI run saw a node that knew 2 of 3 for 30 s): meet the
      // others again from this node; MEET of a known node is harmless.
      if (known < ports.length && Date.now() - metAt > 1_000) {
        metAt = Date.now();
        for (let other = 0; other < ports.length; other += 1) if (other !== index) await meet(admin, other);
      }
      await new Promise((resolve) => setTimeout(resolve, 50)); // gossip has no event to wait on
    }
  }
}
