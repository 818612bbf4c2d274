import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServerHandle, startRedis } from '@deadbolt/conformance/servers';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from './cli-process.js';

let server: ServerHandle;
let redis: Redis;
let dir: string;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  dir = mkdtempSync(join(tmpdir(), 'deadbolt-cli-lost-'));
});
afterAll(async () => {
  await redis?.quit().catch(() => redis.disconnect());
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A command that announces itself and runs until a signal; its TERM trap writes `marker` (or ignores TERM). */
function command(marker: string, onTerm: 'record' | 'ignore'): string[] {
  const trap = onTerm === 'record' ? `trap 'echo got-term > "${marker}"; exit 0' TERM` : `trap '' TERM`;
  return ['sh', '-c', `${trap}; echo ready; while :; do sleep 0.05; done`];
}

describe('deadbolt run when the lock is lost (Redis)', () => {
  it('the key forced away on the server: the command gets SIGTERM, deadbolt says why and exits 79', async () => {
    const marker = join(dir, 'forced');
    // ttl 1500: renewed every 500 ms, so the next renewal finds the key gone.
    const cli = startCli(['run', 'forced', '--ttl', '1500', '--', ...command(marker, 'record')], { DEADBOLT_URL: server.url });
    await cli.waitForStdout('ready');
    expect(await redis.del('deadbolt:forced')).toBe(1);
    const exit = await cli.exited;
    expect(exit.code, exit.stderr).toBe(79);
    expect(readFileSync(marker, 'utf8')).toBe('got-term\n');
    expect(exit.stderr).toMatch(/deadbolt: lost the lock "forced" \(.+\); stopping the command: SIGTERM now/);
    expect(exit.stderr).toContain('exiting 79');
  });

  it('a command that ignores SIGTERM gets SIGKILL after --grace; deadbolt still exits 79', async () => {
    const cli = startCli(['run', 'stubborn', '--ttl', '1500', '--grace', '200', '--', ...command('', 'ignore')], {
      DEADBOLT_URL: server.url,
    });
    await cli.waitForStdout('ready');
    expect(await redis.del('deadbolt:stubborn')).toBe(1);
    const exit = await cli.exited;
    expect(exit.code, exit.stderr).toBe(79);
    expect(exit.stderr).toContain('SIGKILL in 200 ms');
  });

  it('the server frozen so renewals go unanswered: the lease runs out, the command is stopped, exit 79', async () => {
    const marker = join(dir, 'frozen');
    const cli = startCli(['run', 'frozen', '--ttl', '1500', '--', ...command(marker, 'record')], { DEADBOLT_URL: server.url });
    await cli.waitForStdout('ready');
    await server.pause();
    try {
      const exit = await cli.exited;
      expect(exit.code, exit.stderr).toBe(79);
      expect(readFileSync(marker, 'utf8')).toBe('got-term\n');
      expect(exit.stderr).toContain('lost the lock "frozen"');
    } finally {
      await server.resume();
    }
  });

  it('someone else takes the key after the loss: the lost run does not delete the new owner', async () => {
    const cli = startCli(['run', 'taken', '--ttl', '1500', '--', ...command(join(dir, 'taken'), 'record')], { DEADBOLT_URL: server.url });
    await cli.waitForStdout('ready');
    await redis.set('deadbolt:taken', 'someone-else');
    expect((await cli.exited).code).toBe(79);
    expect(await redis.get('deadbolt:taken')).toBe('someone-else');
  });
});
