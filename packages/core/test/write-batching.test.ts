import { setImmediate as nextCheckPhase } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { batchWrite, type Corkable } from '../src/adapter/index.js';

/** A socket that records what batchWrite does to it; `corked` is the depth, as Node's writableCorked. */
function recordingSocket(): Corkable & { corked: number; flushes: number; log: string[] } {
  return {
    corked: 0,
    flushes: 0,
    log: [],
    cork() {
      this.corked += 1;
      this.log.push('cork');
    },
    uncork() {
      this.corked -= 1;
      this.flushes += 1;
      this.log.push('uncork');
    },
  };
}

describe('batchWrite (the adapter kit)', () => {
  it('leaves a lone write alone: no cork, nothing held', async () => {
    const socket = recordingSocket();
    batchWrite(socket);
    expect(socket.log).toEqual([]);
    await nextCheckPhase();
    expect(socket.log).toEqual([]);
  });

  it('corks from the second write of a turn and sends it all at the check phase', async () => {
    const socket = recordingSocket();
    for (let write = 0; write < 5; write += 1) batchWrite(socket);
    expect(socket.corked).toBe(1);
    expect(socket.flushes).toBe(0);
    await nextCheckPhase();
    expect(socket.corked).toBe(0);
    expect(socket.log).toEqual(['cork', 'uncork']);
    // A new turn: its first write goes out alone again.
    batchWrite(socket);
    expect(socket.corked).toBe(0);
  });

  it('flushes every `flushEvery` held writes within the turn, and the rest at the check phase', async () => {
    const socket = recordingSocket();
    for (let write = 0; write < 1 + 1 + 7; write += 1) batchWrite(socket, 4);
    // first alone; second corks (held 0); held reaches 4 after the 4 next: one flush, then 3 held
    expect(socket.flushes).toBe(1);
    expect(socket.corked).toBe(1);
    await nextCheckPhase();
    expect(socket.flushes).toBe(2);
    expect(socket.corked).toBe(0);
  });

  it('keeps sockets apart: each has its own first write', async () => {
    const [a, b] = [recordingSocket(), recordingSocket()];
    batchWrite(a);
    batchWrite(b);
    batchWrite(a);
    expect(a.corked).toBe(1);
    expect(b.corked).toBe(0);
    await nextCheckPhase();
    expect([a.corked, b.corked]).toEqual([0, 0]);
  });
});
