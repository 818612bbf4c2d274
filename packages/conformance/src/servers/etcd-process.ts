import { join } from 'node:path';
import { requireBinary } from './binaries.js';
import { ProcessServer } from './process-server.js';
import { probeEtcd } from './probes.js';
import { makeServerDir } from './temp-dir.js';

/** One member as `--initial-cluster` names it. */
export interface EtcdMember {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
}

export interface EtcdProcessConfig {
  readonly member: EtcdMember;
  /** Every member of the cluster, this one included (one entry: a single-member cluster). */
  readonly cluster: readonly EtcdMember[];
  /** Unique per cluster, so that members of two test clusters never join each other. */
  readonly clusterToken: string;
  readonly readyTimeoutMs: number;
}

/**
 * An etcd member from Debian's binary in a temp data dir, on loopback ports. The data dir survives
 * down() and up(), so a restarted member rejoins with its data (`--initial-cluster-state new` is
 * ignored once the data dir holds a member). Returned spawned but not yet ready: a cluster spawns
 * every member before waiting, since none answers `/health` before a quorum is up.
 */
export function etcdProcess(config: EtcdProcessConfig): ProcessServer {
  const etcd = requireBinary('etcd');
  const host = '127.0.0.1';
  const dir = makeServerDir('etcd');
  const { member } = config;
  const peerUrl = (m: EtcdMember): string => `http://${host}:${m.peerPort}`;
  const clientUrl = `http://${host}:${member.clientPort}`;
  const port = member.clientPort;
  const server = new ProcessServer({
    kind: 'etcd',
    command: etcd,
    args: [
      '--name',
      member.name,
      '--data-dir',
      join(dir, 'data'),
      '--listen-client-urls',
      clientUrl,
      '--advertise-client-urls',
      clientUrl,
      '--listen-peer-urls',
      peerUrl(member),
      '--initial-advertise-peer-urls',
      peerUrl(member),
      '--initial-cluster',
      config.cluster.map((m) => `${m.name}=${peerUrl(m)}`).join(','),
      '--initial-cluster-token',
      config.clusterToken,
      '--initial-cluster-state',
      'new',
    ],
    host,
    port,
    url: `etcd://${host}:${port}`,
    dir,
    probe: (timeoutMs) => probeEtcd(host, port, timeoutMs),
    readyTimeoutMs: config.readyTimeoutMs,
  });
  server.spawnProcess();
  return server;
}
