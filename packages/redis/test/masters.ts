import type { ServerHandle } from '@deadbolt/conformance/servers';

/**
 * RedLock's N masters seen as one ServerHandle for the conformance suite: a fault applies to every
 * master (the whole lock service goes down, freezes, restarts); `nodes` lists them for the client.
 */
export function combineMasters(masters: readonly ServerHandle[]): ServerHandle & { readonly nodes: readonly string[] } {
  const first = masters[0];
  if (first === undefined) throw new Error('combineMasters: no masters');
  const all = (action: (master: ServerHandle) => Promise<void>) => async (): Promise<void> => {
    await Promise.all(masters.map(action));
  };
  const stop = all((master) => master.stop());
  return {
    kind: 'redis',
    provider: first.provider,
    host: first.host,
    port: first.port,
    url: `redis://${masters.map((master) => `${master.host}:${master.port}`).join(',')}?mode=redlock`,
    nodes: masters.map((master) => `${master.host}:${master.port}`),
    stop,
    restart: all((master) => master.restart()),
    pause: all((master) => master.pause()),
    resume: all((master) => master.resume()),
    down: all((master) => master.down()),
    up: all((master) => master.up()),
    [Symbol.asyncDispose]: stop,
  };
}
