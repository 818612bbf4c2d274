import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dockerEndpoint } from './docker-api.js';
import { descendantPids } from './process-tree.js';

/**
 * A last line of defence: whatever a test forgot to stop (or could not, because the test process
 * is exiting) is killed when this process exits or receives SIGINT/SIGTERM/SIGHUP. Normal cleanup
 * is each handle's stop(); this only covers what is still registered at exit.
 * 'exit' handlers must be synchronous: process groups get SIGKILL, temp dirs rmSync, and
 * containers are removed by a short synchronous child (node) calling the Docker API.
 */
interface Registry {
  readonly processGroups: Set<number>;
  readonly tempDirs: Set<string>;
  readonly containers: Set<string>;
  readonly networks: Set<string>;
  installed: boolean;
}

/**
 * One registry per process, shared through globalThis: vitest loads this module afresh for every
 * test file, and one set of exit/signal handlers must see every copy's servers (and never stack
 * up listeners, which would also stop a signal from being re-raised).
 */
const registryKey = Symbol.for('@deadbolt/conformance/servers/exit-cleanup');
const registry: Registry = ((globalThis as Record<symbol, Registry | undefined>)[registryKey] ??= {
  processGroups: new Set(),
  tempDirs: new Set(),
  containers: new Set(),
  networks: new Set(),
  installed: false,
});
const { processGroups, tempDirs, containers, networks } = registry;

export function trackProcessGroup(pgid: number): void {
  install();
  processGroups.add(pgid);
}
export function untrackProcessGroup(pgid: number): void {
  processGroups.delete(pgid);
}
export function trackTempDir(path: string): void {
  install();
  tempDirs.add(path);
}
export function untrackTempDir(path: string): void {
  tempDirs.delete(path);
}
export function trackContainer(id: string): void {
  install();
  containers.add(id);
}
export function untrackContainer(id: string): void {
  containers.delete(id);
}
export function trackNetwork(id: string): void {
  install();
  networks.add(id);
}
export function untrackNetwork(id: string): void {
  networks.delete(id);
}

function install(): void {
  if (registry.installed) return;
  registry.installed = true;
  process.on('exit', cleanupSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      cleanupSync();
      // Re-raise only if nobody else handles it, so the default (exit) still happens.
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}

function cleanupSync(): void {
  for (const pgid of processGroups) {
    // Descendants in sessions of their own (PostgreSQL backends) first, while they are still ours:
    // a paused one would otherwise stay stopped for good once its postmaster is gone.
    for (const pid of [...descendantPids(pgid), -pgid]) {
      for (const signal of ['SIGKILL', 'SIGCONT'] as const) {
        try {
          process.kill(pid, signal);
        } catch {
          /* already gone */
        }
      }
    }
  }
  processGroups.clear();
  if (containers.size > 0 || networks.size > 0) removeContainersSync([...containers], [...networks]);
  containers.clear();
  networks.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
  tempDirs.clear();
}

/** DELETE /containers/{id}?force=1&v=1 then DELETE /networks/{id}, from a child we wait for. */
export function removeContainersSync(containerIds: readonly string[], networkIds: readonly string[] = []): void {
  const endpoint = dockerEndpoint();
  if (endpoint === undefined) return;
  const script = `
    const http = require('node:http');
    const [endpoint, containers, networks] = JSON.parse(process.argv[1]);
    const target = endpoint.socketPath ? { socketPath: endpoint.socketPath } : { host: endpoint.host, port: endpoint.port };
    const del = (path) => new Promise((resolve) => {
      const req = http.request({ ...target, method: 'DELETE', path, timeout: 10000 }, (res) => { res.resume(); res.on('end', resolve); });
      req.on('error', resolve); req.on('timeout', () => req.destroy()); req.end();
    });
    (async () => {
      await Promise.all(containers.map((id) => del('/containers/' + id + '?force=1&v=1')));
      await Promise.all(networks.map((id) => del('/networks/' + id)));
    })();`;
  spawnSync(process.execPath, ['-e', script, JSON.stringify([endpoint, containerIds, networkIds])], { stdio: 'ignore', timeout: 20_000 });
}
