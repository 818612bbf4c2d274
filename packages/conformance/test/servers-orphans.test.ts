/**
 * Nothing is left behind when the test process itself goes away: a process that exits without
 * calling stop() takes its servers with it (exit handlers), and what a SIGKILLed process left is
 * removed by reapOrphans() (the globalSetup teardown and scripts/reap-servers.mjs).
 * The child runs the built fixtures (dist), as an adapter package would.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { missingPackages, reapOrphans } from '../src/servers/index.js';
import { dockerEndpoint, probeDockerEngine } from '../src/servers/docker-api.js';

const built = fileURLToPath(new URL('../dist/servers/index.js', import.meta.url));
const endpoint = dockerEndpoint();
const engine = endpoint === undefined ? undefined : await probeDockerEngine(endpoint, 1_000);
const providers = [
  { name: 'process', skip: missingPackages().length > 0 },
  { name: 'container', skip: engine === undefined },
] as const;

/** Starts a Redis in a child node process; resolves with its address once printed. */
function childWithRedis(provider: string, stayAlive: boolean): Promise<{ child: ReturnType<typeof spawn>; host: string; port: number }> {
  const script = `
    const { startRedis } = await import(${JSON.stringify(built)});
    const server = await startRedis({ provider: ${JSON.stringify(provider)} });
    console.log(JSON.stringify({ host: server.host, port: server.port }));
    ${stayAlive ? 'setInterval(() => {}, 1000);' : '/* exit without stop() */'}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line !== undefined) resolve({ child, ...(JSON.parse(line) as { host: string; port: number }) });
    });
    child.on('exit', (code) => {
      if (!out.includes('{')) reject(new Error(`child exited (${code}) before starting redis:\n${err}`));
    });
  });
}

/**
 * True when nothing listens on the port. A container's published port comes from the ephemeral
 * range (ports.ts: kernelPickedPort), as did every server's before freePort kept below it; with
 * nothing listening the kernel may pick that same port as our source port and connect the socket to
 * itself (TCP simultaneous open): 2 of 10 checks right after a reap did. That is not a server.
 */
function refuses(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => (socket.destroy(), resolve(false)), 2_000);
    socket.on('connect', () => {
      clearTimeout(timer);
      const toItself = socket.localPort === socket.remotePort && socket.localAddress === socket.remoteAddress;
      socket.destroy();
      resolve(toItself);
    });
    socket.on('error', () => (clearTimeout(timer), resolve(true)));
  });
}

/** Polls refuses() until it is true or `ms` has passed. */
async function refusesWithin(host: string, port: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await refuses(host, port)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const exited = (child: ReturnType<typeof spawn>): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));

describe.skipIf(!existsSync(built))('orphans (needs the build: npx tsc -b packages/conformance)', () => {
  for (const { name, skip } of providers) {
    test.skipIf(skip)(`${name}: a process that exits without stop() takes its server along`, { timeout: 60_000 }, async () => {
      const { child, host, port } = await childWithRedis(name, false);
      await exited(child);
      expect(child.exitCode).toBe(0);
      expect(await refuses(host, port)).toBe(true);
    });

    test.skipIf(skip)(`${name}: what a SIGKILLed process left is reaped`, { timeout: 60_000 }, async () => {
      const { child, host, port } = await childWithRedis(name, true);
      child.kill('SIGKILL');
      await exited(child);
      expect(await refuses(host, port)).toBe(false); // still running: nobody cleaned up yet
      const report = await reapOrphans();
      expect(report.containers + report.processGroups).toBeGreaterThanOrEqual(1);
      // reapOrphans returns once the killed servers are zombies; on this project's CI sandbox
      // (gVisor) a zombie's listening socket still took a connection for up to ~100 ms after that
      // (3 of 10 runs; `ss` listed no listener). Closed within a deadline, then.
      expect(await refusesWithin(host, port, 5_000)).toBe(true);
    });
  }
});
