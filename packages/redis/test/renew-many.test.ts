import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import type { Grant } from '@deadbolt/core/adapter';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RedisMode } from '../src/index.js';
import { grantOf, Opened, request } from './support.js';

let server: ServerHandle;
const opened = new Opened();

beforeAll(async () => {
  server = await startRedis();
});
afterEach(() => opened.closeAll());
afterAll(() => server?.stop());

/** Reads the server processed: one per read event on a client socket, i.e. per request round trip. */
async function readsProcessed(raw: ReturnType<Opened['raw']>): Promise<number> {
  const info = await raw.info('stats');
  const match = /total_reads_processed:(\d+)/.exec(info);
  if (!match) throw new Error('this Redis does not report total_reads_processed');
  return Number(match[1]);
}

describe.each(['setnx', 'hash-reentrant', 'getset'] as RedisMode[])('redis %s renewMany', (mode) => {
  it('renews 200 grants in one pipeline (a handful of server reads, not 200) and reports each', async () => {
    const backend = opened.backend(server.url, { mode });
    const raw = opened.raw(server.url);
    const grants: Grant[] = [];
    for (let index = 0; index < 200; index += 1)
      grants.push(await grantOf(backend, request(`many:${mode}:${index}`, 5_000, `owner-${index}`)));
    // One grant is no longer ours: its answer must be false, the others true.
    await raw.del(grants[7]!.key);
    await backend.renewMany(grants.slice(0, 2), [60_000, 60_000]); // warm: scripts loaded in the pipeline path

    const before = await readsProcessed(raw);
    const results = await backend.renewMany(
      grants,
      grants.map(() => 60_000),
    );
    const after = await readsProcessed(raw);

    expect(results.filter((result) => result)).toHaveLength(199);
    expect(results[7]).toBe(false);
    // The INFO call itself is one read; a 200-command pipeline may span a few socket reads.
    const reads = after - before;
    expect(reads).toBeLessThan(20);
    console.log(`[${mode}] renewMany of 200 grants: ${reads} server read(s)`);
    if (mode !== 'getset') expect(await raw.pttl(grants[0]!.key)).toBeGreaterThan(50_000);
  });

  it('one renew per grant would cost one read each (the comparison the pipeline is measured against)', async () => {
    const backend = opened.backend(server.url, { mode });
    const raw = opened.raw(server.url);
    const grants: Grant[] = [];
    for (let index = 0; index < 20; index += 1)
      grants.push(await grantOf(backend, request(`one:${mode}:${index}`, 5_000, `owner-${index}`)));
    const before = await readsProcessed(raw);
    for (const grant of grants) expect(await backend.renew(grant, 60_000)).toBe(true);
    const after = await readsProcessed(raw);
    expect(after - before).toBeGreaterThanOrEqual(20);
  });
});
