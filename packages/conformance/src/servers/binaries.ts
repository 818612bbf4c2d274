import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Where the `process` provider finds the Debian server binaries. Each can be overridden by an
 * environment variable for other layouts (DEADBOLT_REDIS_SERVER, DEADBOLT_MEMCACHED,
 * DEADBOLT_PG_BIN (a directory with initdb and postgres), DEADBOLT_JAVA, DEADBOLT_ZOOKEEPER_JAR, DEADBOLT_ETCD).
 */
export interface ServerBinaries {
  readonly redisServer: string | undefined;
  readonly memcached: string | undefined;
  /** The directory holding initdb and postgres (Debian: /usr/lib/postgresql/<major>/bin). */
  readonly postgresBin: string | undefined;
  readonly java: string | undefined;
  /** Debian's zookeeper.jar, whose manifest Class-Path names its dependencies. */
  readonly zooKeeperJar: string | undefined;
  /** etcd 3.4 (Debian's etcd-server). */
  readonly etcd: string | undefined;
}

/** The Debian package that provides each missing piece. */
export const debianPackages = {
  redisServer: 'redis-server',
  memcached: 'memcached',
  postgresBin: 'postgresql',
  java: 'zookeeper',
  zooKeeperJar: 'zookeeper',
  etcd: 'etcd-server',
} as const satisfies Record<keyof ServerBinaries, string>;

export function findServerBinaries(env: NodeJS.ProcessEnv = process.env): ServerBinaries {
  // An override that points nowhere counts as missing, not as found.
  const given = (name: string, check: (path: string) => boolean): string | null | undefined => {
    const value = env[name];
    if (value === undefined || value === '') return undefined;
    return check(value) ? value : null;
  };
  const pick = (override: string | null | undefined, fallback: () => string | undefined): string | undefined =>
    override === null ? undefined : (override ?? fallback());
  return {
    redisServer: pick(given('DEADBOLT_REDIS_SERVER', executable), () => onPath('redis-server', env)),
    memcached: pick(given('DEADBOLT_MEMCACHED', executable), () => onPath('memcached', env)),
    postgresBin: pick(
      given('DEADBOLT_PG_BIN', (dir) => executable(join(dir, 'initdb')) && executable(join(dir, 'postgres'))),
      postgresBinDir,
    ),
    java: pick(given('DEADBOLT_JAVA', executable), () => onPath('java', env)),
    zooKeeperJar: pick(given('DEADBOLT_ZOOKEEPER_JAR', existsSync), () =>
      existsSync('/usr/share/java/zookeeper.jar') ? '/usr/share/java/zookeeper.jar' : undefined,
    ),
    etcd: pick(given('DEADBOLT_ETCD', executable), () => onPath('etcd', env)),
  };
}

/** The Debian packages to install for what is missing (empty when all is there). */
export function missingPackages(binaries: ServerBinaries = findServerBinaries()): string[] {
  const missing = (Object.keys(debianPackages) as (keyof ServerBinaries)[]).filter((name) => binaries[name] === undefined);
  return [...new Set(missing.map((name) => debianPackages[name]))];
}

/** Throws a message naming the exact command when a binary a fixture needs is missing. */
export function requireBinary<K extends keyof ServerBinaries>(name: K): string {
  const path = findServerBinaries()[name];
  if (path === undefined) {
    throw new Error(
      `the process provider needs the Debian package ${debianPackages[name]}: run ` +
        `\`sudo apt-get install -y ${debianPackages[name]}\`, or use containers (Docker/podman, DEADBOLT_SERVERS=container)`,
    );
  }
  return path;
}

/** The newest /usr/lib/postgresql/<major>/bin that has initdb and postgres. */
function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  return majors
    .map((major) => join(root, major, 'bin'))
    .find((bin) => executable(join(bin, 'initdb')) && executable(join(bin, 'postgres')));
}

function onPath(command: string, env: NodeJS.ProcessEnv): string | undefined {
  const dirs = (env['PATH'] ?? '').split(delimiter).concat(['/usr/sbin', '/usr/bin', '/usr/local/bin']);
  return dirs.map((dir) => join(dir, command)).find(executable);
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
