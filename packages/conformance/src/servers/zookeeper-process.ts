import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireBinary } from './binaries.js';
import { ProcessServer } from './process-server.js';
import { probeZooKeeper } from './probes.js';
import { makeServerDir } from './temp-dir.js';

/** One member of a quorum as zoo.cfg names it. */
export interface QuorumMember {
  readonly id: number;
  readonly host: string;
  readonly quorumPort: number;
  readonly electionPort: number;
}

export interface ZooKeeperProcessConfig {
  readonly clientPort: number;
  readonly tickTimeMs: number;
  readonly readyTimeoutMs: number;
  /** Absent: standalone. Present: this member's id and the whole ensemble. */
  readonly quorum?: { readonly myId: number; readonly members: readonly QuorumMember[] };
}

/** log4j 1.2 to the console (our log file); Debian's zkEnv.sh logs to /var/log instead. */
const log4jProperties = [
  'log4j.rootLogger=INFO, CONSOLE',
  'log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender',
  'log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout',
  'log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n',
  '',
].join('\n');

/**
 * A ZooKeeper server from Debian's jars, started the way /usr/share/zookeeper/bin/zkServer.sh does
 * (`java -cp <conf dir>:zookeeper.jar:<slf4j binding> QuorumPeerMain zoo.cfg`; zookeeper.jar's
 * manifest Class-Path brings in the rest). The JVM flags trade peak speed for start-up time.
 * Returned spawned but not yet ready (an ensemble spawns every member before waiting).
 */
export function zooKeeperProcess(config: ZooKeeperProcessConfig): ProcessServer {
  const java = requireBinary('java');
  const jar = requireBinary('zooKeeperJar');
  const host = '127.0.0.1';
  const dir = makeServerDir('zookeeper');
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  const lines = [
    `tickTime=${config.tickTimeMs}`,
    'initLimit=10',
    'syncLimit=5',
    `dataDir=${dataDir}`,
    `clientPort=${config.clientPort}`,
    `clientPortAddress=${host}`,
    'admin.enableServer=false',
    '4lw.commands.whitelist=*',
    'maxClientCnxns=0',
  ];
  if (config.quorum !== undefined) {
    writeFileSync(join(dataDir, 'myid'), `${config.quorum.myId}\n`);
    for (const member of config.quorum.members) {
      lines.push(`server.${member.id}=${member.host}:${member.quorumPort}:${member.electionPort}`);
    }
  }
  writeFileSync(join(dir, 'zoo.cfg'), `${lines.join('\n')}\n`);
  writeFileSync(join(dir, 'log4j.properties'), log4jProperties);
  const binding = ['/usr/share/java/slf4j-log4j12.jar', '/usr/share/java/log4j-1.2.jar'].filter((path) => existsSync(path));
  const port = config.clientPort;
  const server = new ProcessServer({
    kind: 'zookeeper',
    command: java,
    args: [
      '-Xms32m',
      '-Xmx256m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-Dzookeeper.admin.enableServer=false',
      '-cp',
      [dir, jar, ...binding].join(':'),
      'org.apache.zookeeper.server.quorum.QuorumPeerMain',
      join(dir, 'zoo.cfg'),
    ],
    host,
    port,
    url: `zookeeper://${host}:${port}`,
    dir,
    probe: (timeoutMs) => probeZooKeeper(host, port, timeoutMs),
    readyTimeoutMs: config.readyTimeoutMs,
  });
  server.spawnProcess();
  return server;
}
