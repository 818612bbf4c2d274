import { requireBinary } from './binaries.js';
import { chooseProvider, readyOrStop } from './choose.js';
import { ContainerServer } from './container-server.js';
import { freePort } from './ports.js';
import { probeMemcached } from './probes.js';
import { ProcessServer } from './process-server.js';
import { makeServerDir } from './temp-dir.js';
import type { ServerHandle, StartOptions } from './types.js';

const defaultReadyMs = 30_000;

/** One memcached (64 MB, TCP only). Memcached keeps nothing across a restart, in both providers. */
export async function startMemcached(options?: StartOptions): Promise<ServerHandle> {
  const readyTimeoutMs = options?.readyTimeoutMs ?? defaultReadyMs;
  if ((await chooseProvider(options)) === 'container') {
    const server = await ContainerServer.create({
      kind: 'memcached',
      image: 'memcached:1.6',
      containerPort: 11211,
      command: ['-m', '64', '-U', '0'],
      url: (host, port) => `memcached://${host}:${port}`,
      probe: probeMemcached,
      readyTimeoutMs,
    });
    return readyOrStop(server);
  }
  const command = requireBinary('memcached');
  const host = '127.0.0.1';
  const port = await freePort(host);
  const dir = makeServerDir('memcached');
  // memcached refuses to run as root unless told which user to become.
  const asUser = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
  const server = new ProcessServer({
    kind: 'memcached',
    command,
    args: ['-p', String(port), '-U', '0', '-l', host, '-m', '64', ...asUser],
    host,
    port,
    url: `memcached://${host}:${port}`,
    dir,
    // memcached takes a second to exit on SIGTERM and has nothing to save: a kill is as good.
    stopSignal: 'SIGKILL',
    probe: (timeoutMs) => probeMemcached(host, port, timeoutMs),
    readyTimeoutMs,
  });
  server.spawnProcess();
  return readyOrStop(server);
}
