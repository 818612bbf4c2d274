import memjs from 'memjs';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeHard, openSocketCount, trackSockets } from '../src/memjs-sockets.js';
import { startMemcached, type ServerHandle } from './support.js';

function currentSocket(client: memjs.Client): Socket {
  const socket = (client as unknown as { servers: { _socket?: Socket }[] }).servers[0]?._socket;
  if (socket === undefined) throw new Error('memjs has no socket open');
  return socket;
}

/** memjs reads its request timeout (seconds) from each server's options. */
function setRequestTimeout(client: memjs.Client, seconds: number): void {
  for (const server of (client as unknown as { servers: { options: { timeout: number } }[] }).servers) server.options.timeout = seconds;
}

const closed = (socket: Socket): Promise<void> =>
  new Promise((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));

describe("memjs's sockets after a request timeout", () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startMemcached();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('one socket stays in use (the timed-out one does not orphan its successor), and closeHard ends them all', async () => {
    const client = memjs.Client.create(`${server.host}:${server.port}`, {
      retries: 1,
      timeout: 0.3,
      conntimeout: 0.3,
      logger: { log: () => undefined },
    });
    trackSockets(client);
    try {
      await client.set('memjs-sockets', 'v', {});
      const first = currentSocket(client);
      await server.pause();
      // Times out: memjs ends the first socket (it closes once the server reads its FIN)...
      await expect(client.get('memjs-sockets')).rejects.toThrow();
      // ...and this request opens the second, with time enough to be answered once the server wakes.
      setRequestTimeout(client, 10);
      const second = client.get('memjs-sockets');
      expect(currentSocket(client)).not.toBe(first);
      await server.resume();
      expect((await second).value?.toString()).toBe('v');
      await closed(first);
      // memjs's own 'close' handler of the first socket cleared the field that held the second, and
      // the next request opened a third: two open, one of them referenced by nobody.
      const value = await client.get('memjs-sockets');
      expect(value.value?.toString()).toBe('v');
      expect(openSocketCount(client)).toBe(1);
    } finally {
      closeHard(client);
    }
    expect(openSocketCount(client)).toBe(0);
  });
});
