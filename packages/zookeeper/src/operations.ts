import zookeeper from 'node-zookeeper-client';
import { DeadlineWheel } from '@deadbolt/core/adapter';
import type { Client, Event, Stat } from 'node-zookeeper-client';
import { directConnection, directCreate, directDelete, directGetChildren, directWatchData } from './direct-requests.js';
import { batchWrites } from './write-batching.js';

/**
 * node-zookeeper-client's callbacks as promises with a deadline. The client queues requests while
 * it is disconnected and retries forever, so without a deadline a dead ensemble means a hang.
 */
export const { Exception, CreateMode } = zookeeper;

/** A request that did not complete in time: the server may or may not have applied it. */
export class OperationTimeoutError extends Error {
  constructor(readonly operation: string) {
    super(`ZooKeeper ${operation} did not complete in time`);
    this.name = 'OperationTimeoutError';
  }
}

export function errorCode(error: unknown): number | undefined {
  return error instanceof Exception ? error.getCode() : undefined;
}

export const isNoNode = (error: unknown): boolean => errorCode(error) === Exception.NO_NODE;
export const isNodeExists = (error: unknown): boolean => errorCode(error) === Exception.NODE_EXISTS;
/** Outcome unknown: the request may have been applied (CONNECTION_LOSS) or we stopped waiting. */
export const isInDoubt = (error: unknown): boolean =>
  errorCode(error) === Exception.CONNECTION_LOSS || error instanceof OperationTimeoutError;

/** The deadline wheel of each session's client (session.ts), so that requests share one timer. */
const wheels = new WeakMap<Client, DeadlineWheel>();

/**
 * Bounds `client`'s requests on `wheel` (the adapter kit's timing wheel) instead of a Node timer
 * each: every request arms a deadline and nearly all are cleared a millisecond later, and a timer
 * per request (two lengths in flight with core's own) showed in the uncontended profile as timer-list
 * and priority-queue work. The owner stops the wheel when it closes.
 */
export function boundOnWheel(client: Client, wheel: DeadlineWheel): void {
  wheels.set(client, wheel);
}

/**
 * Calls `expire` after `ms` on `client`'s deadline wheel (late by at most 1/64 of `ms`, never early),
 * or on a Node timer when the client has none. Returns the cancel.
 */
export function afterMs(client: Client, ms: number, expire: () => void): { cancel(): void } {
  const wheel = wheels.get(client);
  if (wheel !== undefined) return wheel.watch(ms, expire);
  const timer = setTimeout(expire, ms);
  return { cancel: () => clearTimeout(timer) };
}

/** Who hears of each answer the server gives on a client's session (session.ts: its local deadline). */
const contacts = new WeakMap<Client, (sentAt: number) => void>();

/**
 * Calls `heard(sentAt)` with the send time of every request on `client` that the server answered:
 * the server had our session alive when it read it, so it cannot expire the session before
 * sentAt + the session timeout. The send time, not the arrival of the reply: after a stall a reply
 * that waited in the socket says nothing about how long ago the server last heard from us.
 */
export function onServerContact(client: Client, heard: (sentAt: number) => void): void {
  contacts.set(client, heard);
}

/** Replies the server itself gave (success, or an answer about the data); not a lost connection or an expired session. */
const answerCodes: ReadonlySet<number> = new Set([
  Exception.NO_NODE,
  Exception.NODE_EXISTS,
  Exception.BAD_VERSION,
  Exception.NOT_EMPTY,
  Exception.NO_CHILDREN_FOR_EPHEMERALS,
]);

function isServerAnswer(error: unknown): boolean {
  if (!error) return true;
  const code = errorCode(error);
  return code !== undefined && answerCodes.has(code);
}

/**
 * Runs one callback-style request, rejecting with OperationTimeoutError at `deadline`. `late` sees
 * the real outcome of a request that completed after we stopped waiting (to undo a late create).
 * `client`: the request is on it (its writes are batched, its deadline on its wheel if it has one).
 */
export function request<T>(
  operation: string,
  deadline: number,
  start: (done: (error: unknown, value?: T) => void) => void,
  late?: (value: T) => void,
  client?: Client,
): Promise<T> {
  if (client !== undefined) batchWrites(client);
  const wheel = client === undefined ? undefined : wheels.get(client);
  const heard = client === undefined ? undefined : contacts.get(client);
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const expire = (): void => {
      settled = true;
      reject(new OperationTimeoutError(operation));
    };
    const sentAt = Date.now();
    const waitMs = Math.max(0, deadline - sentAt);
    const watch = wheel?.watch(waitMs, expire);
    const timer = watch === undefined ? setTimeout(expire, waitMs) : undefined;
    start((error, value) => {
      if (heard !== undefined && isServerAnswer(error)) heard(sentAt);
      if (settled) {
        if (!error && late) late(value as T);
        return;
      }
      settled = true;
      if (watch !== undefined) watch.cancel();
      else clearTimeout(timer);
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve(value as T);
    });
  });
}

export function create(
  client: Client,
  path: string,
  data: Buffer,
  mode: number,
  deadline: number,
  late?: (path: string) => void,
): Promise<string> {
  const direct = directConnection(client);
  return request<string>(
    'create',
    deadline,
    direct !== undefined
      ? (done) => directCreate(direct, path, data, mode, (error, created) => done(error, created?.path))
      : (done) => client.create(path, data, mode, (error, created) => done(error, created)),
    late,
    client,
  );
}

/** node-zookeeper-client's connection state: the zxid of the last reply header it read. */
interface WithLastZxid {
  readonly connectionManager?: { readonly zxid?: Buffer };
}

/**
 * create() that also answers the node's czxid, read from the reply header: for a write the server
 * sends the zxid of that very transaction (FinalRequestProcessor: the data tree's last processed
 * zxid right after applying it; committed writes are applied one at a time), which is the node's
 * czxid. node-zookeeper-client handles each reply synchronously (header, then our callback), so the
 * zxid it has just stored is our reply's. Undefined when the library does not expose it: the caller
 * then stats the node. This saves the stat a holder otherwise sends for its fence on every look.
 */
export function createReturningZxid(
  client: Client,
  path: string,
  data: Buffer,
  mode: number,
  deadline: number,
  late?: (created: { readonly path: string }) => void,
): Promise<{ readonly path: string; readonly czxid: Buffer | undefined }> {
  const direct = directConnection(client);
  return request<{ readonly path: string; readonly czxid: Buffer | undefined }>(
    'create',
    deadline,
    direct !== undefined
      ? (done) => directCreate(direct, path, data, mode, done)
      : (done) =>
          client.create(path, data, mode, (error, created) => {
            const zxid = (client as unknown as WithLastZxid).connectionManager?.zxid;
            done(error, { path: created, czxid: Buffer.isBuffer(zxid) && zxid.length === 8 ? Buffer.from(zxid) : undefined });
          }),
    late,
    client,
  );
}

/**
 * Makes `path` and any missing ancestors. The node itself is created first: its ancestors (the base
 * path) nearly always exist, and node-zookeeper-client's mkdirp creates every segment from the root,
 * one round trip after another. Those round trips each waited behind everything else the session had
 * sent (one session's requests run in order): 500 first-time keys at once on a loaded 3-node ensemble
 * queued 1,500 creates, two thirds of them NODE_EXISTS, and a listing behind them outlasted its 3 s
 * deadline (CI). Only when the parent is missing (NO_NODE) is the whole path made.
 */
export async function mkdirp(client: Client, path: string, deadline: number): Promise<string> {
  try {
    return await create(client, path, Buffer.alloc(0), CreateMode.PERSISTENT, deadline);
  } catch (error) {
    if (isNodeExists(error)) return path;
    if (!isNoNode(error)) throw error;
  }
  return request<string>('mkdirp', deadline, (done) => client.mkdirp(path, (error, created) => done(error, created)), undefined, client);
}

export function remove(client: Client, path: string, deadline: number): Promise<void> {
  const direct = directConnection(client);
  return request<void>(
    'delete',
    deadline,
    direct !== undefined ? (done) => directDelete(direct, path, -1, done) : (done) => client.remove(path, -1, (error) => done(error)),
    undefined,
    client,
  );
}

export function getChildren(client: Client, path: string, deadline: number): Promise<string[]> {
  const direct = directConnection(client);
  return request<string[]>(
    'getChildren',
    deadline,
    direct !== undefined
      ? (done) => directGetChildren(direct, path, done)
      : (done) => client.getChildren(path, (error, children) => done(error, children)),
    undefined,
    client,
  );
}

/** exists() without a watch: the Stat, or undefined when there is no node. */
export function stat(client: Client, path: string, deadline: number): Promise<Stat | undefined> {
  return request<Stat | undefined>(
    'exists',
    deadline,
    (done) => client.exists(path, (error, found) => done(error, found ?? undefined)),
    undefined,
    client,
  );
}

/**
 * getData with a watcher, as Curator's LockInternals does (not exists(): exists() leaves a watch
 * behind on a missing node, getData fails with NO_NODE and sets none).
 */
export function watchData(client: Client, path: string, watcher: (event: Event) => void, deadline: number): Promise<void> {
  const direct = directConnection(client);
  return request<void>(
    'getData',
    deadline,
    direct !== undefined
      ? (done) => directWatchData(direct, path, watcher, done)
      : (done) => client.getData(path, watcher, (error) => done(error)),
    undefined,
    client,
  );
}

/** getData without a watch: the data and Stat, or undefined when there is no node. */
export function getDataAndStat(
  client: Client,
  path: string,
  deadline: number,
): Promise<{ readonly data: Buffer; readonly stat: Stat } | undefined> {
  return request<{ readonly data: Buffer; readonly stat: Stat } | undefined>(
    'getData',
    deadline,
    (done) =>
      client.getData(path, (error, data, found) => {
        if (isNoNode(error)) done(null, undefined);
        else done(error, { data: data ?? Buffer.alloc(0), stat: found });
      }),
    undefined,
    client,
  );
}

/** setData guarded by `version` (BAD_VERSION when the node changed since it was read). */
export function setDataAt(client: Client, path: string, data: Buffer, version: number, deadline: number): Promise<void> {
  return request<void>('setData', deadline, (done) => client.setData(path, data, version, (error) => done(error)), undefined, client);
}

export const isBadVersion = (error: unknown): boolean => errorCode(error) === Exception.BAD_VERSION;

/** A zxid (8-byte big-endian long) as a number: epoch << 32 | counter stays below 2^53 for any real epoch. */
export function zxid(buffer: Buffer): number {
  return Number(buffer.readBigInt64BE(0));
}
