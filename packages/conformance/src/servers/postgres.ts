import { spawn } from 'node:child_process';
import { chownSync, closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Wait } from 'testcontainers';
import { requireBinary } from './binaries.js';
import { chooseProvider, readyOrStop } from './choose.js';
import { ContainerServer } from './container-server.js';
import { freePort } from './ports.js';
import { probePostgres } from './probes.js';
import { ProcessServer } from './process-server.js';
import { systemUser } from './system-user.js';
import { makeServerDir } from './temp-dir.js';
import type { PostgresServerHandle, ServerHandle, StartOptions } from './types.js';

const defaultReadyMs = 60_000;
const user = 'postgres';
// Distinctive, so the credential scan cannot confuse it with the word deadbolt in names.
const password = 'pg-S3cr3t-pw';
const database = 'postgres';

/**
 * Durability off (fsync, synchronous_commit, full_page_writes): these are throwaway test
 * servers, and it makes restarts fast. 200 connections: the safety cases open one per contender.
 * pg_stat_statements (shipped with the server on Debian and in the images) is the suite's
 * command counter (counters.ts: bad input sends no statement).
 */
const serverSettings = [
  '-c',
  'fsync=off',
  '-c',
  'synchronous_commit=off',
  '-c',
  'full_page_writes=off',
  '-c',
  'max_connections=200',
  '-c',
  'shared_preload_libraries=pg_stat_statements',
];

/**
 * One PostgreSQL server. TCP clients authenticate with SCRAM (user `postgres`, password
 * `pg-S3cr3t-pw`, database `postgres`), as with the official image; the data directory survives
 * restart() and up().
 */
export async function startPostgres(options?: StartOptions): Promise<PostgresServerHandle> {
  const readyTimeoutMs = options?.readyTimeoutMs ?? defaultReadyMs;
  const server =
    (await chooseProvider(options)) === 'container' ? await containerPostgres(readyTimeoutMs) : await processPostgres(readyTimeoutMs);
  return withCredentials(server);
}

function withCredentials(server: ServerHandle): PostgresServerHandle {
  return Object.assign(server, { kind: 'postgres' as const, user, password, database });
}

const url = (host: string, port: number): string =>
  `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${encodeURIComponent(database)}`;

async function containerPostgres(readyTimeoutMs: number): Promise<ServerHandle> {
  const server = await ContainerServer.create({
    kind: 'postgres',
    image: 'postgres:16',
    containerPort: 5432,
    command: serverSettings,
    environment: { POSTGRES_USER: user, POSTGRES_PASSWORD: password, POSTGRES_DB: database },
    // The entrypoint runs a temporary server for initialisation first: the line appears twice.
    waitStrategy: Wait.forLogMessage(/database system is ready to accept connections/, 2),
    url,
    probe: (host, port, timeoutMs) => probePostgres(host, port, user, database, timeoutMs),
    readyTimeoutMs,
  });
  return readyOrStop(server);
}

async function processPostgres(readyTimeoutMs: number): Promise<ServerHandle> {
  const bin = requireBinary('postgresBin');
  const host = '127.0.0.1';
  const port = await freePort(host);
  const dir = makeServerDir('postgres');
  // PostgreSQL refuses to run as root: run initdb and the server as the `postgres` account.
  let account: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    account = systemUser('postgres');
    if (account === undefined)
      throw new Error('running as root, the process provider needs the `postgres` account (apt-get install -y postgresql creates it)');
    chownSync(dir, account.uid, account.gid);
  }
  const server = new ProcessServer({
    kind: 'postgres',
    command: join(bin, 'postgres'),
    args: [
      '-D',
      join(dir, 'data'),
      '-p',
      String(port),
      '-c',
      `listen_addresses=${host}`,
      '-c',
      `unix_socket_directories=${dir}`,
      ...serverSettings,
    ],
    host,
    port,
    url: url(host, port),
    dir,
    ...(account ?? {}),
    stopSignal: 'SIGINT', // "fast shutdown": SIGTERM would wait for every client to disconnect
    probe: (timeoutMs) => probePostgres(host, port, user, database, timeoutMs),
    readyTimeoutMs,
  });
  try {
    await initdb(bin, dir, account);
  } catch (error) {
    await server.stop();
    throw error;
  }
  server.spawnProcess();
  return readyOrStop(server);
}

/** initdb with the password from a file (never on a command line), SCRAM for TCP, trust on the socket. */
async function initdb(bin: string, dir: string, account: { uid: number; gid: number } | undefined): Promise<void> {
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (account !== undefined) chownSync(passwordFile, account.uid, account.gid);
  const logPath = join(dir, 'initdb.log');
  const log = openSync(logPath, 'a');
  const args = [
    '-D',
    join(dir, 'data'),
    '-U',
    user,
    `--pwfile=${passwordFile}`,
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '--no-sync',
    '-E',
    'UTF8',
    '--locale=C',
  ];
  try {
    const code = await new Promise<number | string>((resolve) => {
      const child = spawn(join(bin, 'initdb'), args, { cwd: dir, stdio: ['ignore', log, log], ...(account ?? {}) });
      child.once('error', (error) => resolve(error.message));
      child.once('exit', (exitCode, signal) => resolve(exitCode ?? signal ?? 'unknown'));
    });
    if (code !== 0) {
      const tail = readFileSync(logPath, 'utf8').split('\n').slice(-20).join('\n');
      throw new Error(`initdb failed (${code}) in ${dir}:\n${tail}`);
    }
  } finally {
    closeSync(log);
  }
}
