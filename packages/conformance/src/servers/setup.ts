import { decideServerProvider } from './provider.js';
import { ensureServerBinaries } from './install-binaries.js';
import type { ServerProviderName } from './types.js';

/**
 * Decides the provider (one log line) and makes sure it can run: for `process`, the server
 * binaries (installed or a clear error). Sets
 * DEADBOLT_SERVERS to the decision so processes started later (vitest workers) inherit it.
 */
export async function prepareServers(): Promise<ServerProviderName> {
  const { provider } = await decideServerProvider();
  process.env['DEADBOLT_SERVERS'] = provider;
  if (provider === 'process') ensureServerBinaries();
  return provider;
}
