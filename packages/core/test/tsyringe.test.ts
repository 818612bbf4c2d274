// The application's side of the recipe: reflect-metadata once, then tsyringe.
import 'reflect-metadata';
import { readdirSync, readFileSync } from 'node:fs';
import { container, inject, injectable } from 'tsyringe';
import { describe, expect, it } from 'vitest';
import { lockClientToken, type LockClient } from '../src/index.js';
import { registerDeadbolt } from '../src/tsyringe.js';
import { freshMemory } from './helpers.js';

@injectable()
class OrderService {
  constructor(@inject(lockClientToken) readonly locks: LockClient) {}

  async reserve(orderId: string): Promise<number | undefined> {
    return this.locks.withLock(`order:${orderId}`, (lock) => lock.fence);
  }
}

describe('@deadbolt/core/tsyringe', () => {
  it('registerDeadbolt registers a ready LockClient that classes inject by lockClientToken', async () => {
    const scope = container.createChildContainer();
    const { url, store } = freshMemory('di');
    const client = registerDeadbolt(scope, url);
    const service = scope.resolve(OrderService);
    expect(service.locks).toBe(client);
    expect(await service.reserve('1')).toBe(1);
    expect(store.size).toBe(0);
    await client.close();
  });

  it('a second client goes under its own token', async () => {
    const scope = container.createChildContainer();
    const reports = Symbol('reports');
    const main = registerDeadbolt(scope, freshMemory('di-main').url);
    const other = registerDeadbolt(scope, { url: freshMemory('di-reports').url, prefix: 'r:' }, reports);
    expect(scope.resolve(lockClientToken)).toBe(main);
    expect(scope.resolve(reports)).toBe(other);
    await Promise.all([main.close(), other.close()]);
  });

  it('bad configuration throws InvalidArgumentError and registers nothing', () => {
    const scope = container.createChildContainer();
    expect(() => registerDeadbolt(scope, 'nope://x')).toThrow(/unknown scheme/);
    expect(scope.isRegistered(lockClientToken)).toBe(false);
  });

  it('no module of core but the tsyringe entry mentions tsyringe, and none imports reflect-metadata', () => {
    const sources = readdirSync(new URL('../src/', import.meta.url), { recursive: true, encoding: 'utf8' }).filter((file) =>
      file.endsWith('.ts'),
    );
    expect(sources.length).toBeGreaterThan(10);
    for (const file of sources) {
      const text = readFileSync(new URL(`../src/${file}`, import.meta.url), 'utf8');
      expect(text, file).not.toMatch(/from 'reflect-metadata'|import 'reflect-metadata'/);
      if (file !== 'tsyringe.ts') expect(text, file).not.toMatch(/from 'tsyringe'/);
    }
  });
});
