import type { Client } from 'node-zookeeper-client';
import { type LibraryConnection, readsDirectReplies, takeDirectReply } from './direct-requests.js';

/** node-zookeeper-client's private connection state: its reply reader and the part of a frame read so far. */
interface FrameReader extends Partial<LibraryConnection> {
  pendingBuffer: Buffer | null;
  readonly socket?: { readonly destroyed: boolean; destroy(): void };
  onSocketData(this: FrameReader, chunk: Buffer): void;
}

interface WithFrameReader {
  readonly connectionManager?: FrameReader;
}

/**
 * Hands node-zookeeper-client's reply reader one whole frame at a time. Its reader (1.1.3,
 * ConnectionManager.onSocketData) parses one frame per call, keeps the rest of the chunk, and calls
 * itself again, first concatenating that rest with an empty buffer: every frame after the first
 * copies the whole remainder of the chunk, O(frames^2) bytes per chunk. Replies come in large chunks
 * exactly when many requests are in flight on one session (write-batching.ts sends a turn's
 * requests in one writev, and the server answers them together): at 50 keys in flight this copying
 * was the client's largest JavaScript cost after the writes themselves (~25 us per acquire/release
 * cycle, where the bare recipe's one-write-per-request traffic paid ~3). Here the chunk is cut into
 * frames once, each passed to the library's reader whole (it then neither copies nor recurses), and
 * only a partial last frame is kept for the next chunk, where the library kept it too (so
 * stale-frames.ts still drops it when the socket closes). If the library's reader destroys the
 * socket (a reply it cannot match), the rest of the chunk is dropped, as the library's own early
 * return did (a frame is never read on another socket than the one it came from). A reply to one
 * of direct-requests.ts's requests is read there and never reaches the library's reader. The
 * library binds `onSocketData` at each connect, so an own property set before connect() is the one used.
 *
 * A frame the library's reader throws on (it throws on an error code it does not know, from a
 * socket's data handler: an uncaught exception that ended the process, seen once in a whole run
 * while a server restarted) closes the connection instead, as a reply it cannot match does: the
 * library reconnects and the session goes on, and requests in flight fail with a connection loss.
 */
export function readWholeFrames(client: Client): void {
  const reader = (client as unknown as WithFrameReader).connectionManager;
  if (reader === undefined || typeof reader.onSocketData !== 'function') return;
  const readByLibrary = reader.onSocketData;
  const readOne = readsDirectReplies(reader)
    ? function (this: FrameReader, frame: Buffer): void {
        if (!takeDirectReply(this as LibraryConnection, frame)) readByLibrary.call(this, frame);
      }
    : readByLibrary;
  reader.onSocketData = function (this: FrameReader, chunk: Buffer): void {
    try {
      cutAndRead.call(this, chunk);
    } catch {
      this.pendingBuffer = null;
      this.socket?.destroy();
    }
  };
  function cutAndRead(this: FrameReader, chunk: Buffer): void {
    const pending = this.pendingBuffer;
    // The common case with one request in flight: the chunk is exactly one frame, handed on as it is.
    if (pending === null && chunk.length >= 4 && chunk.readInt32BE(0) === chunk.length - 4) {
      readOne.call(this, chunk);
      return;
    }
    const buffer = pending === null || pending.length === 0 ? chunk : Buffer.concat([pending, chunk], pending.length + chunk.length);
    this.pendingBuffer = null;
    const socket = this.socket;
    let offset = 0;
    while (buffer.length - offset >= 4) {
      const end = offset + 4 + buffer.readInt32BE(offset);
      // A negative length is the library's to handle (it cannot be a frame of ours to cut).
      if (end < offset + 4) {
        readByLibrary.call(this, buffer.subarray(offset));
        return;
      }
      if (end > buffer.length) break;
      readOne.call(this, buffer.subarray(offset, end));
      offset = end;
      if (this.socket !== socket || socket?.destroyed === true) {
        this.pendingBuffer = null;
        return;
      }
    }
    this.pendingBuffer = offset < buffer.length ? buffer.subarray(offset) : null;
  }
}
