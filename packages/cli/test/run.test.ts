import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServerHandle, startPostgres, startRedis } from '@deadbolt/conformance/servers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from './cli-process.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'deadbolt-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
/** A fresh path in the test's temp dir (not created). */
const freshPath = (name: string): string => join(dir, `${name}-${++fileCount}`);

/** A child that says it runs, then waits until `done` exists (the test's cue to finish). */
const holdUntil = (done: string): string[] => ['sh', '-c', `echo holding; while [ ! -f "${done}" ]; do sleep 0.05; done`];

describe.each([
  ['redis', startRedis],
  ['postgres', startPostgres],
] as const)('deadbolt run on %s', (_name, start) => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    await server?.stop();
  });
  const env = (): NodeJS.ProcessEnv => ({ DEADBOLT_URL: server.url });

  it('three runs on one key never interleave, and each holder gets a larger DEADBOLT_FENCE', async () => {
    const log = freshPath('log');
    // Each child writes a start and an end line with a pause between: without the lock they would overlap.
    const script = 'echo "start $DEADBOLT_KEY $DEADBOLT_FENCE" >> "$LOG"; sleep 0.2; echo "end $DEADBOLT_KEY $DEADBOLT_FENCE" >> "$LOG"';
    const exits = await Promise.all(
      [1, 2, 3].map(() => runCli(['run', 'shared', '--wait', '60000', '--', 'sh', '-c', script], { ...env(), LOG: log })),
    );
    for (const exit of exits) expect(exit.code, exit.stderr).toBe(0);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(6);
    const fences: number[] = [];
    for (let i = 0; i < lines.length; i += 2) {
      const start = /^start shared (\d+)$/.exec(lines[i]!);
      expect(start, lines.join('\n')).not.toBeNull();
      expect(lines[i + 1], lines.join('\n')).toBe(`end shared ${start![1]}`);
      fences.push(Number(start![1]));
    }
    expect(fences[1]).toBeGreaterThan(fences[0]!);
    expect(fences[2]).toBeGreaterThan(fences[1]!);
  });

  it('while one run holds the key, another with --wait 0 exits 75 without running its command', async () => {
    const done = freshPath('done');
    const ran = freshPath('ran');
    const holder = startCli(['run', 'busy', '--', ...holdUntil(done)], env());
    await holder.waitForStdout('holding');
    const second = await runCli(['run', 'busy', '--wait', '0', '--', 'sh', '-c', `touch "${ran}"`], env());
    expect(second.code, second.stderr).toBe(75);
    expect(second.stderr).toContain('lock not acquired');
    expect(existsSync(ran)).toBe(false);
    writeFileSync(done, '');
    expect((await holder.exited).code).toBe(0);
    // Released on exit: the key is free at once.
    expect((await runCli(['run', 'busy', '--wait', '0', '--', 'true'], env())).code).toBe(0);
  });

  it.each([
    ['exits 0', ['true'], 0],
    ['exits 3', ['sh', '-c', 'exit 3'], 3],
    ['is killed by SIGKILL', ['sh', '-c', 'kill -KILL $$'], 128 + 9],
    ['is not found', ['./no-such-command-here'], 127],
  ])('the exit code is passed through: a command that %s', async (_what, command, code) => {
    const exit = await runCli(['run', 'codes', '--', ...command], env());
    expect(exit.code, exit.stderr).toBe(code);
  });

  it('SIGTERM to deadbolt reaches the command; deadbolt exits with its code and the lock is free afterwards', async () => {
    const marker = freshPath('marker');
    const script = `trap 'echo got-term > "${marker}"; exit 7' TERM; echo ready; while :; do sleep 0.05; done`;
    const cli = startCli(['run', 'forwarded', '--', 'sh', '-c', script], env());
    await cli.waitForStdout('ready');
    cli.process.kill('SIGTERM');
    const exit = await cli.exited;
    expect(exit.code, exit.stderr).toBe(7);
    expect(readFileSync(marker, 'utf8')).toBe('got-term\n');
    expect((await runCli(['run', 'forwarded', '--wait', '0', '--', 'true'], env())).code).toBe(0);
  });
});
