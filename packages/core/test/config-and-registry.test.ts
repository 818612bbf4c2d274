import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createMemoryBackend,
  knownBackendPackages,
  memoryCapabilities,
  memoryStore,
  registerBackend,
  registeredSchemes,
  type BackendConfig,
  type LockBackend,
} from '../src/adapter/index.js';
import { createLockClient, InvalidArgumentError } from '../src/index.js';
import { freshMemory, uniqueName } from './helpers.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('createLockClient: forms of configuration', () => {
  it('accepts a memory:// URL string', async () => {
    const { url, store } = freshMemory('cfg-url');
    const client = createLockClient(url);
    const lock = await client.acquire('k');
    expect(client.backend).toBe('memory');
    expect(await client.capabilities()).toEqual(memoryCapabilities);
    expect(store.live('k', Date.now())?.owner).toBe(lock.owner);
    await client.close();
  });

  it('accepts an object with a url, and a scheme name with backend options', async () => {
    const a = freshMemory('cfg-obj');
    const byUrl = createLockClient({ url: a.url });
    const b = uniqueName('cfg-name');
    const byName = createLockClient({ backend: 'memory', options: { name: b } });
    await byUrl.acquire('k');
    await byName.acquire('k');
    expect(a.store.size).toBe(1);
    expect(memoryStore(b).size).toBe(1);
    await Promise.all([byUrl.close(), byName.close()]);
  });

  it('accepts a ready backend instance', async () => {
    const name = uniqueName('cfg-instance');
    const client = createLockClient({ backend: createMemoryBackend(name) });
    await client.acquire('k');
    expect(memoryStore(name).size).toBe(1);
    await client.close();
  });

  it('clients on the same memory://name contend; different names do not', async () => {
    const shared = freshMemory('cfg-shared');
    const a = createLockClient(shared.url);
    const b = createLockClient(shared.url);
    const other = createLockClient(freshMemory('cfg-other').url);
    await a.acquire('k');
    expect(await b.tryAcquire('k')).toBeNull();
    expect(await other.tryAcquire('k')).not.toBeNull();
    await Promise.all([a.close(), b.close(), other.close()]);
  });

  it('applies the prefix from the options or from ?prefix= to the stored key, not to the user-visible key', async () => {
    const one = freshMemory('cfg-prefix');
    const byOption = createLockClient({ url: one.url, prefix: 'app:' });
    const lock = await byOption.acquire('k');
    expect(lock.key).toBe('k');
    expect(one.store.live('app:k', Date.now())).toBeDefined();
    expect(one.store.live('k', Date.now())).toBeUndefined();

    const two = freshMemory('cfg-prefix-url');
    const byUrl = createLockClient(`${two.url}?prefix=tenant1:`);
    await byUrl.acquire('k');
    expect(two.store.live('tenant1:k', Date.now())).toBeDefined();
    await Promise.all([byOption.close(), byUrl.close()]);
  });

  it('client defaults (ttlMs, waitMs) apply to calls that give none', async () => {
    const { url, store } = freshMemory('cfg-defaults');
    const client = createLockClient({ url, defaults: { ttlMs: 5_000, waitMs: 0 } });
    const before = Date.now();
    await client.acquire('k');
    const entry = store.live('k', Date.now());
    expect(entry?.expiresAt).toBeGreaterThanOrEqual(before + 5_000);
    expect(entry?.expiresAt).toBeLessThanOrEqual(Date.now() + 5_000);
    const other = createLockClient({ url, defaults: { waitMs: 0 } });
    // waitMs 0 from the defaults: one attempt, then a timeout, not a 10 s wait.
    await expect(other.acquire('k')).rejects.toMatchObject({ name: 'LockTimeoutError', waitMs: 0, attempts: 1 });
    await Promise.all([client.close(), other.close()]);
  });
});

describe('DEADBOLT_URL', () => {
  it('is used when createLockClient() gets no configuration', async () => {
    const { url, store } = freshMemory('cfg-env');
    vi.stubEnv('DEADBOLT_URL', url);
    const client = createLockClient();
    await client.acquire('k');
    expect(store.size).toBe(1);
    await client.close();
  });

  it('is used by an options object that names no url and no backend', async () => {
    const { url, store } = freshMemory('cfg-env-obj');
    vi.stubEnv('DEADBOLT_URL', url);
    const client = createLockClient({ prefix: 'p:' });
    await client.acquire('k');
    expect(store.live('p:k', Date.now())).toBeDefined();
    await client.close();
  });

  it('an unknown scheme in DEADBOLT_URL is rejected like any other', () => {
    vi.stubEnv('DEADBOLT_URL', 'nosuch://host');
    expect(() => createLockClient()).toThrow(InvalidArgumentError);
  });
});

describe('the backend registry', () => {
  it('an unknown scheme throws InvalidArgumentError listing the registered schemes', () => {
    const error = thrown(() => createLockClient('nosuch://127.0.0.1:1234'));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    const message = (error as Error).message;
    expect(message).toContain('"nosuch"');
    expect(registeredSchemes()).toContain('memory');
    for (const scheme of registeredSchemes()) expect(message).toContain(scheme);
    for (const scheme of Object.keys(knownBackendPackages)) expect(message).toContain(scheme);
  });

  it('an unknown scheme by name ({ backend }) is rejected the same way', () => {
    expect(() => createLockClient({ backend: 'nosuch' })).toThrow(/unknown scheme "nosuch".*memory/);
  });

  // vitest.config.ts aliases @deadbolt/zookeeper to a module that fails to import, as a missing package does.
  it('a known scheme whose package is not installed names the package to install', async () => {
    expect(knownBackendPackages.zookeeper).toBe('@deadbolt/zookeeper');
    const client = createLockClient('zookeeper://127.0.0.1:2181/locks');
    const error = await rejection(client.acquire('k'));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toContain('npm install @deadbolt/zookeeper');
    await expect(client.capabilities()).rejects.toBeInstanceOf(InvalidArgumentError);
    // A client whose backend never loaded still closes cleanly.
    await client.close();
  });

  it('a third-party adapter registered with registerBackend is usable by URL and gets the parsed URL', async () => {
    const storeName = uniqueName('third-party');
    const seen: BackendConfig[] = [];
    registerBackend('acme-locks', (config) => {
      seen.push(config);
      const inner = createMemoryBackend(storeName);
      const backend: LockBackend = {
        name: 'acme',
        capabilities: inner.capabilities,
        tryAcquire: (request) => inner.tryAcquire(request),
        renew: (grant, ttlMs) => inner.renew(grant, ttlMs),
        release: (grant) => inner.release(grant),
        waitForChange: (key, maxWaitMs, signal) => inner.waitForChange(key, maxWaitMs, signal),
        close: () => inner.close(),
      };
      return backend;
    });
    expect(registeredSchemes()).toContain('acme-locks');
    const client = createLockClient('acme-locks://db.example:7000/x?region=eu');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.url?.hostname).toBe('db.example');
    expect(seen[0]?.url?.searchParams.get('region')).toBe('eu');
    const lock = await client.acquire('k');
    expect(client.backend).toBe('acme');
    expect(memoryStore(storeName).live('k', Date.now())?.token).toBeDefined();
    await lock.release();
    expect(memoryStore(storeName).size).toBe(0);
    await client.close();
  });

  it('a later registration of the same scheme overrides', async () => {
    const first = uniqueName('first');
    const second = uniqueName('second');
    registerBackend('swap', () => createMemoryBackend(first));
    registerBackend('swap', () => createMemoryBackend(second));
    const client = createLockClient('swap://');
    await client.acquire('k');
    expect(memoryStore(first).size).toBe(0);
    expect(memoryStore(second).size).toBe(1);
    await client.close();
  });
});

describe('bad configuration is rejected before any I/O', () => {
  it('a malformed URL', () => {
    expect(() => createLockClient('not a url')).toThrow(InvalidArgumentError);
    expect(() => createLockClient('redis://127.0.0.1:99999')).toThrow(InvalidArgumentError);
  });

  it('an unknown config option, an unknown default, a bad default', () => {
    expect(() => createLockClient({ url: 'memory://', retries: 3 } as never)).toThrow(/config option "retries"/);
    // The tsyringe container option is gone (DI lives in @deadbolt/core/tsyringe): refused, not ignored.
    expect(() => createLockClient({ url: 'memory://', container: {} } as never)).toThrow(/config option "container"/);
    expect(() => createLockClient({ url: 'memory://', defaults: { timeout: 1 } as never })).toThrow(/defaults option "timeout"/);
    expect(() => createLockClient({ url: 'memory://', defaults: { ttlMs: 0 } })).toThrow(InvalidArgumentError);
    expect(() => createLockClient({ url: 'memory://', defaults: { waitMs: Number.NaN } })).toThrow(InvalidArgumentError);
    expect(() => createLockClient({ url: 'memory://', prefix: 7 as never })).toThrow(InvalidArgumentError);
    expect(() => createLockClient(42 as never)).toThrow(InvalidArgumentError);
  });

  it('memory:// rejects unknown URL parameters and unknown options, and touches no store', () => {
    const { name, store } = freshMemory('cfg-bad-mem');
    expect(() => createLockClient(`memory://${name}?mode=fast`)).toThrow(/mode/);
    // @ts-expect-error an unknown option is a type error too (options are typed by scheme)
    expect(() => createLockClient({ backend: 'memory', options: { name, size: 3 } })).toThrow(/option "size"/);
    expect(store.operations).toBe(0);
  });
});
