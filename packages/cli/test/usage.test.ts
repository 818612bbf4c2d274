import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-process.js';

// A TCP listener standing in for a backend: it counts connections and drops each at once, so a
// deadbolt that does contact it fails fast (exit 69) instead of waiting for an answer.
let listener: Server;
let connections = 0;
let url: string;

beforeAll(async () => {
  listener = createServer((socket: Socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  url = `redis://127.0.0.1:${address.port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => listener.close(() => resolve()));
});

const badCommandLines: readonly (readonly string[])[] = [
  [],
  ['lock'],
  ['run'],
  ['run', '--', 'true'],
  ['run', 'k'],
  ['run', 'k', 'true'],
  ['run', 'k', '--'],
  ['run', 'k', '--ttl', '5s', '--', 'true'],
  ['run', 'k', '--ttl', '0', '--', 'true'],
  ['run', 'k', '--ttl', '-1', '--', 'true'],
  ['run', 'k', '--wait', '1.5', '--', 'true'],
  ['run', 'k', '--grace', '', '--', 'true'],
  ['run', 'k', '--ttl', '--', 'true'],
  ['run', 'k', '--bogus', '--', 'true'],
  ['run', 'k', 'extra', '--', 'true'],
  ['leader'],
  ['leader', 'jobs', 'extra'],
  ['leader', 'jobs', '--interval', '100'],
  ['leader', 'jobs', '--watch', '--interval', 'soon'],
  ['leader', 'jobs', '--follow'],
  ['inspect'],
  ['inspect', 'a', 'b'],
  ['list', '--limit', '0'],
  ['list', '--limit', 'many'],
  ['list', 'extra'],
  ['release', 'k'],
  ['release', '--force'],
  ['watch'],
  ['last-run'],
  ['last-run', 'a', 'b'],
  ['watch', 'k', '--interval', '0'],
];

describe('deadbolt usage errors', () => {
  it.each(badCommandLines.map((args) => [args.join(' ') || '(nothing)', args] as const))(
    '%s: exit 64 with the usage line on stderr, and the backend is never contacted',
    async (_name, args) => {
      const exit = await runCli(args, { DEADBOLT_URL: url });
      expect(exit.code, exit.stderr).toBe(64);
      expect(exit.stderr).toMatch(/^deadbolt: .+\nusage: deadbolt /);
      expect(exit.stdout).toBe('');
      expect(connections).toBe(0);
    },
  );

  it('memory:// is refused as a usage error: its locks cannot be shared between processes', async () => {
    const exit = await runCli(['run', 'k', '--url', 'memory://', '--', 'true']);
    expect(exit.code).toBe(64);
    expect(exit.stderr).toContain('memory:// holds locks inside one process');
  });

  it('no backend at all is a usage error naming --url and DEADBOLT_URL', async () => {
    const exit = await runCli(['leader', 'jobs']);
    expect(exit.code).toBe(64);
    expect(exit.stderr).toContain('give --url or set DEADBOLT_URL');
  });

  it('an unknown scheme is a usage error', async () => {
    const exit = await runCli(['run', 'k', '--url', 'consul://127.0.0.1:8500', '--', 'true']);
    expect(exit.code).toBe(64);
    expect(exit.stderr).toContain('unknown scheme "consul"');
  });

  // The control: a good command line does reach the same listener, so the zero above can fail.
  it('a good command line does contact the backend, and an unanswering one is exit 69', async () => {
    const before = connections;
    const exit = await runCli(['run', 'k', '--wait', '0', '--', 'true'], { DEADBOLT_URL: url });
    expect(exit.code, exit.stderr).toBe(69);
    expect(connections).toBeGreaterThan(before);
  });
});

describe('deadbolt --help and --version', () => {
  it.each([[['--help']], [['-h']], [['run', '--help']], [['run', 'k', '-h', '--', 'true']], [['leader', '--help']]])(
    '%j prints help on stdout and exits 0',
    async (args) => {
      const exit = await runCli(args);
      expect(exit.code).toBe(0);
      expect(exit.stdout).toMatch(/^usage: deadbolt /);
      expect(exit.stderr).toBe('');
    },
  );

  it('the help documents the exit codes and the polling of leader --watch', async () => {
    expect((await runCli(['--help'])).stdout).toMatch(/64 +usage error[\s\S]*75 [\s\S]*79 +run: the lock was lost/);
    expect((await runCli(['release', '--help'])).stdout).toContain('Refused without --force');
    expect((await runCli(['leader', '--help'])).stdout).toContain('it reads the leader every --interval ms');
  });

  it('--version prints the package version', async () => {
    const exit = await runCli(['--version']);
    expect(exit.code).toBe(0);
    expect(exit.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
