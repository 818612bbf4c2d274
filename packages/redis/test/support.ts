import type { AcquireRequest, Grant } from '@deadbolt/core/adapter';
import { Redis } from 'ioredis';
import { createRedisBackend, type RedisBackend, type RedisBackendOptions } from '../src/index.js';

/** Backends and raw connections a test opened; `closeAll` in afterEach/afterAll frees them. */
export class Opened {
  private readonly closers: (() => Promise<unknown>)[] = [];

  backend(url: string, options: RedisBackendOptions = {}): RedisBackend {
    const backend = createRedisBackend({ ...optionsFromUrl(url), ...options });
    this.closers.push(() => backend.close());
    return backend;
  }

  raw(url: string): Redis {
    const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined);
    this.closers.push(() => redis.quit().catch(() => redis.disconnect()));
    return redis;
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled(this.closers.splice(0).map((close) => close()));
  }
}

function optionsFromUrl(url: string): RedisBackendOptions {
  const { hostname, port } = new URL(url);
  return { nodes: [`${hostname}:${port}`] };
}

export function request(key: string, ttlMs = 10_000, owner = 'owner-a'): AcquireRequest {
  return { key, owner, ttlMs, onLost: () => undefined };
}

/** tryAcquire that must succeed. */
export async function grantOf(backend: RedisBackend, acquireRequest: AcquireRequest): Promise<Grant> {
  const result = await backend.tryAcquire(acquireRequest);
  if (!result.acquired) throw new Error(`expected to acquire ${acquireRequest.key}`);
  return result.grant;
}

/** Resolves with the time it took `promise` to settle, and whether it rejected. */
export async function timed<T>(promise: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = performance.now();
  try {
    const value = await promise;
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}
