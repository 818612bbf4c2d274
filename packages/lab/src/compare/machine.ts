/** The machine and the versions a report was measured with, so a reader can compare like with like. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, platform, release, totalmem } from 'node:os';
import { basename, dirname, join } from 'node:path';

export interface MachineInfo {
  readonly platform: string;
  readonly release: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGb: number;
  readonly node: string;
  /** 'process' (server binaries) or 'container'. */
  readonly servers: string;
  /** Server name -> version (or container image). */
  readonly serverVersions: Readonly<Record<string, string>>;
  /** Client package -> version. */
  readonly clientVersions: Readonly<Record<string, string>>;
}

const require = createRequire(import.meta.url);

function packageVersion(name: string): string {
  try {
    // Walk up from the entry point to the package's own package.json (exports may hide it).
    let dir = require.resolve(name);
    for (let i = 0; i < 6; i++) {
      dir = join(dir, '..');
      try {
        const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
        if (pkg.name === name && pkg.version) return pkg.version;
      } catch {
        /* keep walking */
      }
    }
  } catch {
    /* not installed */
  }
  return 'not installed';
}

/** The first line a binary prints about itself, or undefined. */
function printed(command: string, args: string[]): string | undefined {
  try {
    return execFileSync(command, args, { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'pipe'] })
      .split('\n')[0]
      ?.trim();
  } catch {
    return undefined;
  }
}

/** Debian ships zookeeper.jar beside a zookeeper-<version>.jar link to it. */
function zooKeeperJarVersion(jar: string): string {
  const named = /zookeeper-([\d.]+)\.jar$/.exec(basename(realpathSync(jar)))?.[1];
  if (named) return named;
  const sibling = readdirSync(dirname(jar))
    .map((f) => /^zookeeper-([\d.]+)\.jar$/.exec(f)?.[1])
    .find(Boolean);
  return sibling ?? 'unknown';
}

async function serverVersions(provider: string): Promise<Record<string, string>> {
  if (provider === 'container')
    return { redis: 'image redis:7', memcached: 'image memcached:1.6', postgres: 'image postgres:16', zookeeper: 'image zookeeper:3.8' };
  const { findServerBinaries } = await import('@deadbolt/conformance/servers');
  const b = findServerBinaries();
  const out: Record<string, string> = {};
  const redis = b.redisServer && printed(b.redisServer, ['--version']);
  out.redis = /v=(\S+)/.exec(redis ?? '')?.[1] ?? 'unknown';
  out.memcached = (b.memcached && printed(b.memcached, ['-V']))?.replace(/^memcached\s*/, '') ?? 'unknown';
  out.postgres =
    (b.postgresBin && printed(join(b.postgresBin, 'postgres'), ['--version']))?.replace(/^postgres \(PostgreSQL\)\s*/, '') ?? 'unknown';
  out.zookeeper = b.zooKeeperJar ? zooKeeperJarVersion(b.zooKeeperJar) : 'unknown';
  return out;
}

export async function machineInfo(): Promise<MachineInfo> {
  let provider = 'unknown';
  try {
    const { serverProvider } = await import('@deadbolt/conformance/servers');
    provider = await serverProvider();
  } catch {
    /* fixtures not built: leave it unknown */
  }
  return {
    platform: platform(),
    release: release(),
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    servers: provider,
    serverVersions: await serverVersions(provider).catch(() => ({})),
    clientVersions: Object.fromEntries(
      ['@deadbolt/core', '@deadbolt/fence', 'ioredis', 'pg', 'memjs', 'node-zookeeper-client'].map((n) => [n, packageVersion(n)]),
    ),
  };
}
