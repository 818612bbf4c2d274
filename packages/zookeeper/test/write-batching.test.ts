import type { Socket } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Client } from 'node-zookeeper-client';
import { describe, expect, it } from 'vitest';
import { batchWrites } from '../src/write-batching.js';

/**
 * The write batching alone, on a stand-in for node-zookeeper-client's socket (no server: what is
 * checked is when the socket is corked and uncorked, not ZooKeeper). The recipe tests and the
 * conformance suite run every request through it against real servers.
 */
function fakeClient(): { client: Client; calls: string[] } {
  const calls: string[] = [];
  const socket = {
    destroyed: false,
    cork: () => calls.push('cork'),
    uncork: () => calls.push('uncork'),
  } as unknown as Socket;
  return { client: { connectionManager: { socket } } as unknown as Client, calls };
}

describe('batchWrites', () => {
  it('sends the first request of a turn at once and corks the rest until the check phase, once per turn', async () => {
    const { client, calls } = fakeClient();
    batchWrites(client);
    expect(calls).toEqual([]); // a lone request is not held back
    batchWrites(client);
    batchWrites(client);
    expect(calls).toEqual(['cork']);
    await nextTurn();
    expect(calls).toEqual(['cork', 'uncork']);
    batchWrites(client); // a new turn: at once again
    expect(calls).toEqual(['cork', 'uncork']);
    await nextTurn();
    expect(calls).toEqual(['cork', 'uncork']); // nothing corked, nothing to uncork
  });

  it('batches each socket on its own, and leaves a destroyed socket alone', async () => {
    const a = fakeClient();
    const b = fakeClient();
    batchWrites(a.client);
    batchWrites(b.client);
    batchWrites(b.client);
    expect(a.calls).toEqual([]);
    expect(b.calls).toEqual(['cork']);
    const gone = fakeClient();
    (gone.client as unknown as { connectionManager: { socket: { destroyed: boolean } } }).connectionManager.socket.destroyed = true;
    batchWrites(gone.client);
    batchWrites(gone.client);
    await nextTurn();
    expect(a.calls).toEqual([]);
    expect(b.calls).toEqual(['cork', 'uncork']);
    expect(gone.calls).toEqual([]);
  });
});
