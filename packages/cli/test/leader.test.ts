import { type ServerHandle, startRedis } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from './cli-process.js';

let server: ServerHandle;
let client: LockClient;

beforeAll(async () => {
  server = await startRedis();
  client = createLockClient(server.url);
});
afterAll(async () => {
  await client?.close();
  await server?.stop();
});

/** Joins election `name` as `id` and resolves once it leads; `resign()` gives the term up. */
async function lead(name: string, id: string): Promise<{ resign(): Promise<void> }> {
  const election = client.elect(name, { id });
  const terms = election[Symbol.asyncIterator]();
  const first = await terms.next();
  if (first.done) throw new Error(`${id} never led ${name}`);
  return { resign: () => election.resign() };
}

const isoTime = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('deadbolt leader (Redis)', () => {
  it('names the leader that a Deadbolt client elected, as a bare id and as JSON', async () => {
    const term = await lead('jobs', 'worker-7');
    try {
      const bare = await runCli(['leader', 'jobs'], { DEADBOLT_URL: server.url });
      expect(bare.code, bare.stderr).toBe(0);
      expect(bare.stdout).toBe('worker-7\n');
      const json = await runCli(['leader', 'jobs', '--json', '--url', server.url]);
      expect(json.code, json.stderr).toBe(0);
      const line = JSON.parse(json.stdout) as { leader: unknown; at: string };
      expect(Object.keys(line)).toEqual(['leader', 'at']);
      expect(line.leader).toBe('worker-7');
      expect(line.at).toMatch(isoTime);
    } finally {
      await term.resign();
    }
  });

  it('no leader: nothing on stdout and exit 1; with --json a null leader', async () => {
    const bare = await runCli(['leader', 'nobody-leads'], { DEADBOLT_URL: server.url });
    expect(bare.code, bare.stderr).toBe(1);
    expect(bare.stdout).toBe('');
    const json = await runCli(['leader', 'nobody-leads', '--json'], { DEADBOLT_URL: server.url });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ leader: null });
  });

  it('--watch prints a line at each change of leader until SIGINT, then exits 0', async () => {
    const first = await lead('rota', 'alpha');
    const watcher = startCli(['leader', 'rota', '--watch', '--json', '--interval', '50'], { DEADBOLT_URL: server.url });
    try {
      await watcher.waitForStdout('"leader":"alpha"');
      await first.resign();
      await watcher.waitForStdout('"leader":null');
      const second = await lead('rota', 'beta');
      await watcher.waitForStdout('"leader":"beta"');
      await second.resign();
    } finally {
      watcher.process.kill('SIGINT');
    }
    const exit = await watcher.exited;
    expect(exit.code, exit.stderr).toBe(0);
    const lines = exit.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { leader: string | null; at: string });
    // One line per change, never a repeat of the previous leader.
    expect(lines.map((line) => line.leader).slice(0, 3)).toEqual(['alpha', null, 'beta']);
    for (let i = 1; i < lines.length; i++) expect(lines[i]!.leader).not.toBe(lines[i - 1]!.leader);
    for (const line of lines) expect(line.at).toMatch(isoTime);
  });

  it('--watch without --json prints bare ids, an empty line when there is no leader', async () => {
    const term = await lead('plain', 'gamma');
    const watcher = startCli(['leader', 'plain', '--watch', '--interval', '50'], { DEADBOLT_URL: server.url });
    await watcher.waitForStdout('gamma\n');
    await term.resign();
    await watcher.waitForStdout('gamma\n\n');
    watcher.process.kill('SIGTERM');
    expect((await watcher.exited).code).toBe(0);
  });

  it('--watch whose reader went away (| head -1) exits 0 at its next line instead of crashing', async () => {
    const watcher = startCli(['leader', 'piped', '--watch', '--interval', '50'], { DEADBOLT_URL: server.url });
    await watcher.waitForStdout('\n');
    watcher.process.stdout?.destroy();
    const term = await lead('piped', 'delta');
    try {
      const exit = await watcher.exited;
      expect(exit.code, exit.stderr).toBe(0);
      expect(exit.stderr).toBe('');
    } finally {
      await term.resign();
    }
  });
});
