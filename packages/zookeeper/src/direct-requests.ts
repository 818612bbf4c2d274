import zookeeper, { type Client, type Event } from 'node-zookeeper-client';

/**
 * The lock recipe's four hot requests (create, delete, getChildren, getData with a watch) encoded
 * here and their replies decoded here, queued on node-zookeeper-client's own connection so that
 * xids, ordering, reconnects, the session and watch re-registration stay the library's.
 *
 * Why: at 10 workers on one key the adapter spent ~130 us of client CPU per owner change inside the
 * library, against ~85 us for the bare recipe on the same library, most of it building and reading
 * jute Records field by field (a Buffer per 8-byte long, a closure per field, an async.whilst
 * per call for retries we switch off). On a 2-core machine that CPU is taken from the server:
 * 100 us more per owner change cost the bare recipe 7-10% of its owner changes/s. A frame here is
 * one allocation written in one pass, and a reply is read in place.
 *
 * The wire format is ZooKeeper's (jute, big-endian): a request frame is
 * `int length, int xid, int type, body`, a reply frame `int length, int xid, long zxid, int err, body`.
 */

/** node-zookeeper-client's private connection state (1.1.3, ConnectionManager) that this uses. */
export interface LibraryConnection {
  state: number;
  /** The last zxid seen: the library sends it when it reconnects, so the server never goes back in time. */
  zxid: Buffer;
  readonly pendingQueue: ReadonlyArray<{ readonly request: unknown }> & { shift(): unknown };
  readonly socket?: { destroy(): void };
  queue(request: DirectRequest, callback: (error: unknown) => void): void;
  registerDataWatcher(path: string, watcher: (event: Event) => void): void;
}

interface WithConnection {
  readonly connectionManager?: LibraryConnection;
}

const opCodes = { create: 1, delete: 2, getData: 4, getChildren: 8 } as const;
/** ConnectionManager's CONNECTING: the frame read then is the ConnectResponse, which has no xid. */
const connecting = 1;
const replyHeaderBytes = 20;
/** ACL.OPEN_ACL_UNSAFE, what the library's create() sends when given no ACL: world:anyone, all permissions. */
const openAcl = (() => {
  const acl = Buffer.alloc(4 + 4 + 4 + 5 + 4 + 6);
  let offset = acl.writeInt32BE(1, 0);
  offset = acl.writeInt32BE(31, offset);
  offset = putString(acl, offset, 'world', 5);
  putString(acl, offset, 'anyone', 6);
  return acl;
})();

function putString(buffer: Buffer, offset: number, text: string, bytes: number): number {
  buffer.writeInt32BE(bytes, offset);
  buffer.write(text, offset + 4, bytes, 'utf8');
  return offset + 4 + bytes;
}

/** A request frame with its length and type written; the xid is written when the library sends it. */
function newFrame(type: number, bodyBytes: number): Buffer {
  const frame = Buffer.allocUnsafe(12 + bodyBytes);
  frame.writeInt32BE(8 + bodyBytes, 0);
  frame.writeInt32BE(type, 8);
  return frame;
}

/** `path` then a one-byte watch flag: the body of getData and getChildren. */
function pathAndWatch(type: number, path: string, watch: boolean): Buffer {
  const pathBytes = Buffer.byteLength(path);
  const frame = newFrame(type, 4 + pathBytes + 1);
  frame[putString(frame, 12, path, pathBytes)] = watch ? 1 : 0;
  return frame;
}

/**
 * One request in the shape the library's queue sends (it numbers `header.xid`, then writes
 * `toBuffer()`), with what to do with its reply. `payload` null: the library's chroot handling
 * skips it (the adapter applies its chroot itself).
 */
export class DirectRequest {
  readonly header: { xid: number; readonly type: number };
  readonly payload = null;

  constructor(
    private readonly frame: Buffer,
    /** The reply's body (err 0) read from `reply` at `offset`, or the server's error code. */
    readonly answer: (error: number, reply: Buffer, offset: number, zxid: Buffer) => void,
    /** The request failed without a readable reply. */
    readonly fail: (error: Error) => void,
  ) {
    this.header = { xid: 0, type: frame.readInt32BE(8) };
  }

  toBuffer(): Buffer {
    this.frame.writeInt32BE(this.header.xid, 4);
    return this.frame;
  }
}

/** Connections whose replies readWholeFrames hands to takeDirectReply first: only those may be sent direct requests. */
const readers = new WeakSet<LibraryConnection>();

/** Called by the frame reader it installs; a connection without the parts used here (another library version) gets none. */
export function readsDirectReplies(connection: Partial<LibraryConnection>): connection is LibraryConnection {
  const usable =
    Array.isArray(connection.pendingQueue) &&
    typeof connection.queue === 'function' &&
    typeof connection.registerDataWatcher === 'function';
  if (usable) readers.add(connection as LibraryConnection);
  return usable;
}

/** The library's connection of `client`, when direct requests can go on it (its frames are read by us). */
export function directConnection(client: Client): LibraryConnection | undefined {
  const connection = (client as unknown as WithConnection).connectionManager;
  return connection !== undefined && readers.has(connection) ? connection : undefined;
}

/**
 * Answers `frame` (one whole reply frame) if it is the reply to the direct request at the head of
 * the library's pending queue: that request leaves the queue, as the library's reader would take
 * it, and the library never sees the frame. Anything else (a notification, a ping, the library's own
 * requests, an xid out of order, which the library answers by reconnecting) is left to the library.
 */
export function takeDirectReply(connection: LibraryConnection, frame: Buffer): boolean {
  if (connection.state === connecting || frame.length < replyHeaderBytes) return false;
  const head = connection.pendingQueue[0]?.request;
  if (!(head instanceof DirectRequest) || head.header.xid !== frame.readInt32BE(4)) return false;
  connection.pendingQueue.shift();
  const zxid = Buffer.allocUnsafe(8);
  frame.copy(zxid, 0, 8, 16);
  connection.zxid = zxid;
  try {
    head.answer(frame.readInt32BE(16), frame, replyHeaderBytes, zxid);
  } catch (error) {
    // A reply that does not parse (a corrupt stream): this request fails and the connection is
    // replaced, as the library does with a reply it cannot match, instead of an exception thrown
    // from the socket's data handler, which would end the application's process.
    head.fail(new Error(`unreadable ZooKeeper reply: ${error instanceof Error ? error.message : String(error)}`));
    connection.socket?.destroy();
  }
  return true;
}

type Done<T> = (error: unknown, value?: T) => void;

/** Queues a request whose reply `answer` reads; `done` hears any failure. */
function send(
  connection: LibraryConnection,
  frame: Buffer,
  answer: (error: number, reply: Buffer, offset: number, zxid: Buffer) => void,
  done: Done<never>,
): void {
  // The library calls back only with an error (closed, expired, or CONNECTION_LOSS for what was in
  // flight when the socket closed); replies come through takeDirectReply.
  connection.queue(new DirectRequest(frame, answer, done), (error) => done(error ?? failure(zookeeper.Exception.SYSTEM_ERROR)));
}

const createException = (zookeeper.Exception as unknown as { create(code: number): Error }).create;

/** The library's Exception for `code` (what its own requests fail with), or a plain Error for a code it does not know (its create() throws). */
function failure(code: number): Error {
  try {
    return createException(code);
  } catch {
    return new Error(`ZooKeeper replied with unknown error code ${code}`);
  }
}

function readString(reply: Buffer, offset: number): string {
  const bytes = reply.readInt32BE(offset);
  return bytes < 0 ? '' : reply.toString('utf8', offset + 4, offset + 4 + bytes);
}

/** create: the path created (with its sequence) and the reply's zxid, which is the node's czxid. */
export function directCreate(
  connection: LibraryConnection,
  path: string,
  data: Buffer,
  mode: number,
  done: Done<{ readonly path: string; readonly czxid: Buffer }>,
): void {
  const pathBytes = Buffer.byteLength(path);
  const frame = newFrame(opCodes.create, 4 + pathBytes + 4 + data.length + openAcl.length + 4);
  let offset = putString(frame, 12, path, pathBytes);
  offset = frame.writeInt32BE(data.length, offset);
  offset += data.copy(frame, offset);
  offset += openAcl.copy(frame, offset);
  frame.writeInt32BE(mode, offset);
  send(
    connection,
    frame,
    (error, reply, at, zxid) => (error === 0 ? done(null, { path: readString(reply, at), czxid: zxid }) : done(failure(error))),
    done,
  );
}

export function directDelete(connection: LibraryConnection, path: string, version: number, done: Done<void>): void {
  const pathBytes = Buffer.byteLength(path);
  const frame = newFrame(opCodes.delete, 4 + pathBytes + 4);
  frame.writeInt32BE(version, putString(frame, 12, path, pathBytes));
  send(connection, frame, (error) => (error === 0 ? done(null) : done(failure(error))), done);
}

/** getChildren without a watch (the plain request: the listing only, no Stat to build on the server). */
export function directGetChildren(connection: LibraryConnection, path: string, done: Done<string[]>): void {
  send(
    connection,
    pathAndWatch(opCodes.getChildren, path, false),
    (error, reply, at) => {
      if (error !== 0) {
        done(failure(error));
        return;
      }
      const count = reply.readInt32BE(at);
      const children = new Array<string>(Math.max(0, count));
      let offset = at + 4;
      for (let index = 0; index < count; index += 1) {
        const bytes = reply.readInt32BE(offset);
        children[index] = reply.toString('utf8', offset + 4, offset + 4 + bytes);
        offset += 4 + bytes;
      }
      done(null, children);
    },
    done,
  );
}

/** getData with a watch, the watcher registered with the library (so it is set again after a reconnect) when the reply says the node exists. */
export function directWatchData(connection: LibraryConnection, path: string, watcher: (event: Event) => void, done: Done<void>): void {
  send(
    connection,
    pathAndWatch(opCodes.getData, path, true),
    (error) => {
      if (error !== 0) {
        done(failure(error));
        return;
      }
      connection.registerDataWatcher(path, watcher);
      done(null);
    },
    done,
  );
}
