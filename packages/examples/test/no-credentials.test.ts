import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort, startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * No credential in any output (issue 13): the demo against a password-protected Redis, with the
 * right password, a wrong one and a dead port, in both output formats. Every byte of stdout and
 * stderr is scanned for the password (the demo's header once printed the URL as given).
 */
const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const password = 'S3cr3tZq7-demo';
let server: ServerHandle;
let hostPort: string;

function run(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}\n${stderr}` });
    });
  });
}

beforeAll(async () => {
  server = await startRedis();
  hostPort = new URL(server.url).host;
  // The fixture's readiness probe speaks without AUTH, so the password is set once it is up.
  const admin = new Redis(server.url);
  await admin.config('SET', 'requirepass', password);
  admin.disconnect();
});
afterAll(async () => {
  await server?.stop();
});

describe('the demo never prints a password', () => {
  it.each([[[]], [['--json']]])(
    'with the right password (%j): it runs, and the output names the host but not the password',
    async (format) => {
      const { code, output } = await run([
        '--backend',
        `redis://:${password}@${hostPort}`,
        '--orders',
        '30',
        '--stock',
        '10',
        '--concurrency',
        '10',
        ...format,
      ]);
      expect(code, output).toBe(0);
      expect(output).not.toContain(password);
    },
  );

  it('with a wrong password and with a dead port: it fails, saying why, without either password', async () => {
    const wrong = await run(['--backend', `redis://:wrong-${password}@${hostPort}?commandTimeoutMs=1000`, '--orders', '5', '--stock', '2']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.output).not.toContain(password);
    const dead = await run([
      '--backend',
      `redis://:${password}@127.0.0.1:${await freePort()}?commandTimeoutMs=1000`,
      '--orders',
      '5',
      '--stock',
      '2',
    ]);
    expect(dead.code).not.toBe(0);
    expect(dead.output).toContain('ECONNREFUSED');
    expect(dead.output).not.toContain(password);
  });
});
