import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmPack, repoRoot, run } from './pack.js';

/**
 * Issue 13's "done when", as a new user meets Deadbolt: a fresh app installs the packed tarballs
 * of core, redis and conformance from disk, with ioredis 6 and everything else from the npm
 * registry, then imports them in ESM and CommonJS, bundles with esbuild, injects a LockClient with
 * tsyringe (a TypeScript app type-checked against ioredis 6) and runs the conformance suite under
 * vitest 3 and vitest 4. All against a real Redis started by the conformance fixtures.
 */
let app: string;
let redis: ServerHandle;
let env: NodeJS.ProcessEnv;

async function node(args: string[], cwd = app): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, args, { cwd, env, timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
}

async function npm(args: string[]): Promise<string> {
  const { stdout } = await run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: app,
    env,
    timeout: 180_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

beforeAll(async () => {
  app = mkdtempSync(join(tmpdir(), 'deadbolt-fresh-app-'));
  const tarballs = join(app, 'tarballs');
  mkdirSync(tarballs);
  const [core, redisPackage, conformance] = await Promise.all(['core', 'redis', 'conformance'].map((dir) => npmPack(dir, tarballs)));
  cpSync(new URL('../fixtures/app/', import.meta.url), app, { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({
      name: 'fresh-app',
      private: true,
      type: 'module',
      dependencies: {
        '@deadbolt/core': `file:tarballs/${core!.filename}`,
        '@deadbolt/redis': `file:tarballs/${redisPackage!.filename}`,
        ioredis: '^6.0.0',
        'reflect-metadata': '^0.2.2',
        tsyringe: '^4.10.0',
      },
      devDependencies: { '@deadbolt/conformance': `file:tarballs/${conformance!.filename}`, vitest: '^3.2.0' },
    }),
  );
  redis = await startRedis();
  env = { ...process.env, REDIS_URL: redis.url, NODE_OPTIONS: '' };
  await npm(['install']);
});

afterAll(async () => {
  await redis?.stop();
  if (app !== undefined) rmSync(app, { recursive: true, force: true });
});

describe('a fresh app on the packed tarballs', () => {
  it("gets one copy of ioredis (6.x, the app's) and of core, with @opentelemetry/api installed as core's peer", async () => {
    const versions = await node([
      '--input-type=module',
      '-e',
      `import { readFileSync } from 'node:fs';
       import { createRequire } from 'node:module';
       const require = createRequire(process.cwd() + '/');
       const fromRedis = createRequire(require.resolve('@deadbolt/redis'));
       console.log(JSON.stringify({
         ioredis: require('ioredis/package.json').version,
         sameIoredis: fromRedis.resolve('ioredis') === require.resolve('ioredis'),
         sameCore: fromRedis.resolve('@deadbolt/core') === require.resolve('@deadbolt/core'),
         otel: JSON.parse(readFileSync('node_modules/@opentelemetry/api/package.json', 'utf8')).version,
       }));`,
    ]);
    expect(versions).toMatchObject({ sameIoredis: true, sameCore: true });
    expect(versions.ioredis).toMatch(/^6\./);
    expect(versions.otel).toMatch(/^1\./);
  });

  it('imports in ESM and locks on Redis, also through its own ioredis 6 client', async () => {
    expect(await node(['esm.mjs'])).toEqual({ fence: expect.any(Number), nextFence: expect.any(Number), busy: true, invalid: true });
  });

  it('requires in CommonJS, with one core shared with import()', async () => {
    expect(await node(['cjs.cjs'])).toEqual({ fence: expect.any(Number), sameCore: true });
  });

  it('bundles with esbuild into one file that runs with no node_modules at all', async () => {
    const outdir = mkdtempSync(join(tmpdir(), 'deadbolt-bundle-'));
    try {
      await build({
        entryPoints: [join(app, 'bundle-entry.mjs')],
        bundle: true,
        platform: 'node',
        format: 'cjs',
        target: 'node20',
        outfile: join(outdir, 'app.cjs'),
        logLevel: 'error',
      });
      const result = await node(['app.cjs'], outdir);
      expect(result).toEqual({ fence: expect.any(Number), nextFence: expect.any(Number), busy: true, invalid: true });
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('type-checks a TypeScript app against ioredis 6 and injects a LockClient through tsyringe', async () => {
    await run(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: app, env });
    expect(await node(['dist/di.js'])).toEqual({ injected: true, fence: expect.any(Number) });
  });

  it('runs describeLockConformance under vitest 3, then under vitest 4', async () => {
    const counts: Record<string, string> = {};
    for (const vitest of ['3', '4']) {
      if (vitest === '4') await npm(['install', '--save-dev', 'vitest@^4.0.0']);
      const installed = (JSON.parse(readFileSync(join(app, 'node_modules/vitest/package.json'), 'utf8')) as { version: string }).version;
      expect(installed.startsWith(`${vitest}.`), installed).toBe(true);
      const { stdout } = await run(join(app, 'node_modules/.bin/vitest'), ['run', '--reporter=verbose'], {
        cwd: app,
        env: { ...env, CI: '1' },
        timeout: 180_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(stdout).not.toMatch(/No test suite found/);
      counts[vitest] = /Tests\s+(.*)/.exec(stdout)?.[1] ?? stdout;
      expect(counts[vitest]).toMatch(/\d+ passed/);
      expect(counts[vitest]).not.toMatch(/failed/);
    }
    expect(counts['4']).toBe(counts['3']);
  });
});
