import { createLockClient } from './index.js';
import { lockClientToken } from './token.js';
import type { LockClient, LockClientConfig } from './api/client.js';

/**
 * The part of a tsyringe `DependencyContainer` this needs, structurally: any tsyringe 4.x container
 * fits, and core needs neither tsyringe nor `reflect-metadata` at run time (the application, which
 * uses decorators, imports `reflect-metadata` itself, once, as tsyringe asks).
 */
export interface ValueRegistry {
  register<T>(token: symbol, provider: { useValue: T }): unknown;
}

/**
 * Creates a LockClient from `config` (as createLockClient takes it) and registers it in `container`
 * under `token` (default lockClientToken), so classes can take it with `@inject(lockClientToken)`.
 * Returns the client: close it when the application stops.
 */
export function registerDeadbolt<Url extends string = string, Name extends string = string>(
  container: ValueRegistry,
  config?: LockClientConfig<Url, Name>,
  token: symbol = lockClientToken,
): LockClient {
  const client = createLockClient(config);
  container.register<LockClient>(token, { useValue: client });
  return client;
}

export { lockClientToken } from './token.js';
