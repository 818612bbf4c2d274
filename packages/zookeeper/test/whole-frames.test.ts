import type { Client } from 'node-zookeeper-client';
import { describe, expect, it } from 'vitest';
import { readWholeFrames } from '../src/whole-frames.js';

/**
 * The frame cutting alone, on a stand-in for node-zookeeper-client's connection manager (no server:
 * what is checked is which bytes its reader is handed). Every request of the recipe tests and the
 * conformance suite is read through it against real servers.
 */
function frame(body: string): Buffer {
  const bytes = Buffer.from(body, 'utf8');
  const length = Buffer.alloc(4);
  length.writeInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/**
 * `destroyOn`: the body of a frame on which the library's reader destroys its socket (a reply it
 * cannot match); `throwOn`: one it throws on (an error code it does not know).
 */
function fakeReader(
  destroyOn?: string,
  throwOn?: string,
): { client: Client; read: string[]; socket: { destroyed: boolean }; push(chunk: Buffer): void } {
  const read: string[] = [];
  const socket = {
    destroyed: false,
    destroy(): void {
      socket.destroyed = true;
    },
  };
  const manager = {
    pendingBuffer: null as Buffer | null,
    socket,
    // The library's reader, reduced to what matters here: it records what it is handed and, given
    // more than one frame, keeps the rest as its pending buffer (as the real one does before recursing).
    onSocketData(this: { pendingBuffer: Buffer | null }, chunk: Buffer): void {
      read.push(chunk.toString('hex'));
      if (chunk.subarray(4).toString('utf8') === destroyOn) socket.destroyed = true;
      if (chunk.subarray(4).toString('utf8') === throwOn) throw new Error('Unknown code: -1908473854');
      const end = 4 + chunk.readInt32BE(0);
      this.pendingBuffer = end < chunk.length ? chunk.subarray(end) : null;
    },
  };
  const client = { connectionManager: manager } as unknown as Client;
  readWholeFrames(client);
  return { client, read, socket, push: (chunk) => manager.onSocketData(chunk) };
}

describe('readWholeFrames', () => {
  it('hands the library one whole frame per call, however the bytes are chunked', () => {
    const frames = [frame('create'), frame(''), frame('getChildren'.repeat(20)), frame('delete')];
    const stream = Buffer.concat(frames);
    const expected = frames.map((each) => each.toString('hex'));
    // All in one chunk (the library itself would be handed all four and copy the rest three times).
    const whole = fakeReader();
    whole.push(stream);
    expect(whole.read).toEqual(expected);
    // Cut at every byte: each frame still arrives whole, once, in order.
    for (let cut = 1; cut < stream.length; cut += 1) {
      const split = fakeReader();
      split.push(stream.subarray(0, cut));
      split.push(stream.subarray(cut));
      expect(split.read).toEqual(expected);
    }
  });

  it('keeps a partial frame pending (stale-frames.ts drops it on close) and drops the rest of a chunk once the socket is destroyed', () => {
    const reader = fakeReader();
    const manager = (reader.client as unknown as { connectionManager: { pendingBuffer: Buffer | null } }).connectionManager;
    const next = frame('next');
    reader.push(Buffer.concat([frame('a'), next.subarray(0, 6)]));
    expect(manager.pendingBuffer?.toString('hex')).toBe(next.subarray(0, 6).toString('hex'));
    manager.pendingBuffer = null; // the socket closed: stale-frames.ts forgets the partial frame
    reader.push(frame('b'));
    expect(reader.read).toEqual([frame('a').toString('hex'), frame('b').toString('hex')]);

    const mismatched = fakeReader('x');
    mismatched.push(Buffer.concat([frame('x'), frame('y')]));
    expect(mismatched.read).toEqual([frame('x').toString('hex')]);
  });

  it('a frame the library throws on closes the connection instead of escaping the socket handler', () => {
    for (const chunk of [frame('boom'), Buffer.concat([frame('a'), frame('boom'), frame('after')])]) {
      const reader = fakeReader(undefined, 'boom');
      expect(() => reader.push(chunk)).not.toThrow();
      expect(reader.socket.destroyed).toBe(true);
      // Nothing after it is read: the rest of the chunk belonged to the connection now closed.
      expect(reader.read.at(-1)).toBe(frame('boom').toString('hex'));
    }
  });
});
