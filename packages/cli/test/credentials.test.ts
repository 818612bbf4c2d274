import { freePort } from '@deadbolt/conformance/servers';
import { beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { secretsOf } from '../src/backend-url.js';
import { Output } from '../src/output.js';
import { runCli } from './cli-process.js';

// Nothing listens on deadPort: every command below fails, and no output may show the password.
const password = 'pa55-w0rd-secret';
const encoded = 'p%40ss%2Fw0rd-secret';
let deadPort: number;

beforeAll(async () => {
  deadPort = await freePort();
});

const urls = (): readonly string[] => [
  `redis://deadbolt:${password}@127.0.0.1:${deadPort}`,
  `redis://:${password}@127.0.0.1:${deadPort}`,
  `postgres://deadbolt:${password}@127.0.0.1:${deadPort}/deadbolt`,
  `postgres://deadbolt:${encoded}@127.0.0.1:${deadPort}/deadbolt`,
];
// A token-like query value: the Redis adapter refuses the parameter, and the refusal must not quote it.
const queryUrl = (): string => `redis://127.0.0.1:${deadPort}?password=${password}`;

function expectNoSecret(output: string): void {
  for (const secret of [password, encoded, decodeURIComponent(encoded), 'p@ss/w0rd']) expect(output).not.toContain(secret);
}

describe('no credential in any output', () => {
  it('a URL with a password to a dead server: exit 69, and stderr names the failure without the password', async () => {
    for (const url of urls()) {
      for (const args of [
        ['run', 'k', '--url', url, '--wait', '0', '--', 'true'],
        ['leader', 'jobs', '--url', url],
      ]) {
        const exit = await runCli(args);
        expect(exit.code, exit.stderr).toBe(69);
        expect(exit.stderr).toMatch(/^deadbolt: /);
        expectNoSecret(exit.stdout + exit.stderr);
      }
    }
  });

  it('the same URL from DEADBOLT_URL, in usage errors and help: never shown', async () => {
    for (const url of [...urls(), queryUrl()]) {
      for (const args of [['run', '--', 'true'], ['run', 'k', '--url', url, '--bogus'], ['--help'], ['run', '--help'], ['leader', '-h']]) {
        const exit = await runCli(args, { DEADBOLT_URL: url });
        expectNoSecret(exit.stdout + exit.stderr);
      }
    }
  });

  it('a refused query parameter that carries a password: exit 64 without it', async () => {
    const exit = await runCli(['run', 'k', '--url', queryUrl(), '--', 'true']);
    expect(exit.code).toBe(64);
    expect(exit.stderr).toContain('password');
    expectNoSecret(exit.stderr);
  });

  it('a malformed URL that carries a password: a usage error that does not echo it', async () => {
    const exit = await runCli(['run', 'k', '--url', `redis://deadbolt:${password}@[not-a-host`, '--', 'true']);
    expect(exit.code).toBe(64);
    expectNoSecret(exit.stderr);
  });
});

describe('the output layer masks what the library might still quote', () => {
  it('a message quoting the password, raw, decoded or encoded, is masked on stderr and stdout', () => {
    let written = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written += chunk.toString();
        done();
      },
    });
    const output = new Output({ stdout: sink, stderr: sink, env: {} });
    output.hide(secretsOf(`postgres://deadbolt:${encoded}@db:5432/app?sslkey=k3y-file-secret&prefix=jobs`));
    output.error(`driver said: password authentication failed for "${decodeURIComponent(encoded)}" (${encoded})`);
    output.data(`url was postgres://deadbolt:${encoded}@db:5432/app?sslkey=k3y-file-secret&prefix=jobs`);
    expectNoSecret(written);
    expect(written).not.toContain('k3y-file-secret');
    expect(written).toContain('driver said: password authentication failed for "***" (***)');
    expect(written).toContain('prefix=jobs');
  });
});
