import type memjs from 'memjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { add, deleteIfCas, getWithCas, setIfCas } from '../src/index.js';
import { rawClient, startMemcached, type ServerHandle } from './support.js';

describe('binary-protocol CAS helper', () => {
  let server: ServerHandle;
  let client: memjs.Client;
  beforeAll(async () => {
    server = await startMemcached();
    client = rawClient(server);
  });
  afterAll(async () => {
    client?.close();
    await server?.stop();
  });

  it('GET returns the value and a CAS id; absent keys are undefined', async () => {
    expect(await getWithCas(client, 'p:absent')).toBeUndefined();
    expect(await add(client, 'p:a', 'v1', 10)).toBe(true);
    const got = await getWithCas(client, 'p:a');
    expect(got?.value.toString()).toBe('v1');
    expect(got?.cas.length).toBe(8);
    expect(got?.cas.equals(Buffer.alloc(8))).toBe(false);
  });

  it('ADD refuses an existing key', async () => {
    expect(await add(client, 'p:b', 'x', 10)).toBe(true);
    expect(await add(client, 'p:b', 'y', 10)).toBe(false);
    expect((await getWithCas(client, 'p:b'))?.value.toString()).toBe('x');
  });

  it('DELETE with a stale CAS is refused; with the current CAS it deletes', async () => {
    await add(client, 'p:c', 'one', 10);
    const first = await getWithCas(client, 'p:c');
    await client.set('p:c', 'two', { expires: 10 });
    expect(await deleteIfCas(client, 'p:c', first!.cas)).toBe(false);
    expect((await getWithCas(client, 'p:c'))?.value.toString()).toBe('two');
    const second = await getWithCas(client, 'p:c');
    expect(await deleteIfCas(client, 'p:c', second!.cas)).toBe(true);
    expect(await getWithCas(client, 'p:c')).toBeUndefined();
    expect(await deleteIfCas(client, 'p:c', second!.cas)).toBe(false);
  });

  it('SET with CAS replaces only the same version, never creates a missing key', async () => {
    await add(client, 'p:d', 'tok', 10);
    const v = await getWithCas(client, 'p:d');
    expect(await setIfCas(client, 'p:d', 'tok', 20, v!.cas)).toBe(true);
    // The CAS changed with the store: the old CAS no longer matches.
    expect(await setIfCas(client, 'p:d', 'tok', 20, v!.cas)).toBe(false);
    expect(await setIfCas(client, 'p:missing', 'tok', 20, v!.cas)).toBe(false);
    expect(await getWithCas(client, 'p:missing')).toBeUndefined();
  });

  it('SET with CAS sets the new expiry (1 s lease expires; item gone after it)', async () => {
    await add(client, 'p:e', 'tok', 100);
    const v = await getWithCas(client, 'p:e');
    expect(await setIfCas(client, 'p:e', 'tok', 1, v!.cas)).toBe(true);
    const deadline = Date.now() + 5_000;
    while ((await getWithCas(client, 'p:e')) !== undefined) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
