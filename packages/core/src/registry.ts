import 'reflect-metadata';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import type { BackendFactory } from './backend.js';

/**
 * Backend factories live in a tsyringe container under the token `deadbolt:backend:<scheme>`.
 * Deadbolt uses its own child of the root container so registrations never collide with an
 * application's, yet an application can pass its own container (config.container) to override them.
 */
export const backendContainer: DependencyContainer = rootContainer.createChildContainer();

/** Schemes Deadbolt knows a package for, so a missing install gets a precise message and a lazy import. */
export const knownBackendPackages: Readonly<Record<string, string>> = Object.freeze({
  redis: '@deadbolt/redis',
  rediss: '@deadbolt/redis',
  memcached: '@deadbolt/memcached',
  postgres: '@deadbolt/postgres',
  postgresql: '@deadbolt/postgres',
  zookeeper: '@deadbolt/zookeeper',
});

const registered = new Set<string>();

function tokenFor(scheme: string): string {
  return `deadbolt:backend:${scheme}`;
}

/** Makes a backend usable by URL (`<scheme>://...`) and by name (`{ backend: scheme }`). */
export function registerBackend(scheme: string, factory: BackendFactory, container: DependencyContainer = backendContainer): void {
  const normalized = scheme.toLowerCase().replace(/:$/, '');
  container.register<BackendFactory>(tokenFor(normalized), { useValue: factory });
  registered.add(normalized);
}

export function findBackendFactory(scheme: string, container: DependencyContainer = backendContainer): BackendFactory | undefined {
  const token = tokenFor(scheme);
  return container.isRegistered(token, true) ? container.resolve<BackendFactory>(token) : undefined;
}

/** Registered schemes, for error messages. */
export function registeredSchemes(): string[] {
  return [...registered].sort();
}
