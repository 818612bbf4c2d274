import type { Client } from 'node-zookeeper-client';

/** node-zookeeper-client's private connection state: the part of a frame read so far. */
interface FrameState {
  pendingBuffer: Buffer | null;
  onSocketClosed(this: FrameState, hadError: boolean): void;
}

interface WithFrameState {
  readonly connectionManager?: FrameState;
}

/**
 * node-zookeeper-client (1.1.3) keeps the bytes of a reply frame it has not read whole in
 * `pendingBuffer`, and never clears them when the socket closes: after a connection dies mid-frame
 * (a frozen server, a cut link, a ping timeout during a large listing), the next connection's
 * ConnectResponse is read as the tail of that stale frame. Every frame after it is misaligned, and
 * the first reply header that parses as an unknown error code throws from the socket's data
 * handler: an uncaught exception that ends the app's process. Seen once in a CI run after a frozen
 * server woke. A new socket starts on a frame boundary, so the stale bytes are dropped when the old
 * one closes. The library binds `onSocketClosed` at each connect, so an own property set before
 * connect() is the one used.
 */
export function dropStaleFramesOnReconnect(client: Client): void {
  const manager = (client as unknown as WithFrameState).connectionManager;
  if (manager === undefined || typeof manager.onSocketClosed !== 'function') return;
  const onSocketClosed = manager.onSocketClosed;
  manager.onSocketClosed = function (this: FrameState, hadError: boolean): void {
    this.pendingBuffer = null;
    onSocketClosed.call(this, hadError);
  };
}
