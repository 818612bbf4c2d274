import { randomUUID } from 'node:crypto';
import { chooseProvider, readyOrStop, startAllOrNone, stopAll } from './choose.js';
import { ContainerServer } from './container-server.js';
import { type EtcdMember, etcdProcess } from './etcd-process.js';
import { createNetwork } from './network.js';
import { freePorts } from './ports.js';
import { probeEtcd } from './probes.js';
import type { ProcessServer } from './process-server.js';
import type { EtcdCluster, ServerHandle, StartOptions } from './types.js';

const defaultReadyMs = 60_000;
/** The image the shared containers kit builds (Debian's etcd 3.4.23, laid out as the official one). */
const image = 'quay.io/coreos/etcd:v3.4.23';

/**
 * The container command of member `name` of `cluster`, client port 2379. `advertised` is how the
 * other members reach it: its alias on a user network, or localhost for a single member.
 */
function containerCommand(name: string, advertised: string, cluster: string, token: string): string[] {
  return [
    'etcd',
    '--name',
    name,
    '--data-dir',
    '/var/lib/etcd',
    '--listen-client-urls',
    'http://0.0.0.0:2379',
    '--advertise-client-urls',
    `http://${advertised}:2379`,
    '--listen-peer-urls',
    'http://0.0.0.0:2380',
    '--initial-advertise-peer-urls',
    `http://${advertised}:2380`,
    '--initial-cluster',
    cluster,
    '--initial-cluster-token',
    token,
    '--initial-cluster-state',
    'new',
  ];
}

const etcdUrl = (host: string, port: number): string => `etcd://${host}:${port}`;

/** A single-member etcd (its data directory survives restart() and up()). */
export async function startEtcd(options?: StartOptions): Promise<ServerHandle> {
  const readyTimeoutMs = options?.readyTimeoutMs ?? defaultReadyMs;
  if ((await chooseProvider(options)) === 'container') {
    const server = await ContainerServer.create({
      kind: 'etcd',
      image,
      containerPort: 2379,
      // 127.0.0.1, not localhost: in the image localhost resolved to the container's address, which etcd
      // then found missing from --initial-cluster.
      command: containerCommand('etcd1', '127.0.0.1', 'etcd1=http://127.0.0.1:2380', 'deadbolt'),
      url: etcdUrl,
      probe: probeEtcd,
      readyTimeoutMs,
    });
    return readyOrStop(server);
  }
  const [clientPort = 0, peerPort = 0] = await freePorts(2);
  const member = { name: 'etcd1', clientPort, peerPort };
  return readyOrStop(etcdProcess({ member, cluster: [member], clusterToken: randomUUID(), readyTimeoutMs }));
}

/**
 * A cluster of `size` (default 3) members, returned once each answers `/health`. Containers reach
 * each other by alias (etcd1, etcd2, ...) on a user network; processes on loopback ports below the
 * ephemeral range. A member's up() waits until it serves again (it has rejoined a quorum).
 */
export async function startEtcdCluster(size = 3, options?: StartOptions): Promise<EtcdCluster> {
  if (!Number.isInteger(size) || size < 1) throw new Error(`startEtcdCluster: size must be a positive integer, not ${size}`);
  const readyTimeoutMs = options?.readyTimeoutMs ?? defaultReadyMs;
  const names = Array.from({ length: size }, (_, index) => `etcd${index + 1}`);
  const token = randomUUID();
  let cleanup = async (): Promise<void> => undefined;
  let members: (ContainerServer | ProcessServer)[];
  if ((await chooseProvider(options)) === 'container') {
    const owned = await createNetwork();
    cleanup = owned.remove;
    const cluster = names.map((name) => `${name}=http://${name}:2380`).join(',');
    try {
      members = await startAllOrNone(
        names.map((name) =>
          ContainerServer.create({
            kind: 'etcd',
            image,
            containerPort: 2379,
            command: containerCommand(name, name, cluster, token),
            network: { network: owned.network, alias: name },
            url: etcdUrl,
            probe: probeEtcd,
            readyTimeoutMs,
          }),
        ),
      );
    } catch (error) {
      await cleanup();
      throw error;
    }
  } else {
    const ports = await freePorts(size * 2);
    const cluster: EtcdMember[] = names.map((name, index) => ({
      name,
      clientPort: ports[index] ?? 0,
      peerPort: ports[size + index] ?? 0,
    }));
    members = [];
    try {
      for (const member of cluster) members.push(etcdProcess({ member, cluster, clusterToken: token, readyTimeoutMs }));
    } catch (error) {
      await stopAll(members);
      throw error;
    }
  }
  try {
    await Promise.all(members.map((member) => member.waitReady()));
  } catch (error) {
    await stopAll(members).finally(cleanup);
    throw error;
  }
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= stopAll(members).finally(cleanup);
    return stopping;
  };
  const endpoints = members.map((member) => `${member.host}:${member.port}`).join(',');
  return { members, url: `etcd://${endpoints}`, stop, [Symbol.asyncDispose]: stop };
}
