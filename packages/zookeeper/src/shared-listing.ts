import type { Client } from 'node-zookeeper-client';
import { getChildren, mkdirp } from './operations.js';

/**
 * getChildren of one path, shared by the contenders of one client that look at the same time (a
 * crowd of local waiters on one key). Each of N concurrent looks listing N children on its own is
 * O(N^2) names on the wire and through the client's parser: 1,000 waiters on one key took minutes.
 * Sharing is only ever with a listing SENT AFTER the caller asked: ZooKeeper answers one session's
 * requests in order, so such a listing reflects the caller's create (and anything else it did
 * before asking), exactly as its own listing would. While a listing is in flight, callers join the
 * next one, which is sent when the in-flight one is answered; with none in flight, it is sent at
 * once (an uncontended look pays no delay).
 */
interface PathListing {
  inFlight: boolean;
  next: { readonly waiters: ((result: ListingResult) => void)[] } | undefined;
}

type ListingResult = { readonly ok: true; readonly children: string[] } | { readonly ok: false; readonly error: unknown };

const listings = new WeakMap<Client, Map<string, PathListing>>();

export function sharedGetChildren(client: Client, path: string, operationTimeoutMs: number): Promise<string[]> {
  let byPath = listings.get(client);
  if (byPath === undefined) {
    byPath = new Map();
    listings.set(client, byPath);
  }
  let state = byPath.get(path);
  if (state === undefined) {
    state = { inFlight: false, next: undefined };
    byPath.set(path, state);
  }
  return new Promise<string[]>((resolve, reject) => {
    const deliver = (result: ListingResult): void => (result.ok ? resolve(result.children) : reject(result.error));
    if (!state.inFlight) return send(client, path, operationTimeoutMs, state, byPath, [deliver]);
    state.next ??= { waiters: [] };
    state.next.waiters.push(deliver);
  });
}

function send(
  client: Client,
  path: string,
  operationTimeoutMs: number,
  state: PathListing,
  byPath: Map<string, PathListing>,
  waiters: readonly ((result: ListingResult) => void)[],
): void {
  state.inFlight = true;
  const settle = (result: ListingResult): void => {
    state.inFlight = false;
    const next = state.next;
    state.next = undefined;
    if (next !== undefined) send(client, path, operationTimeoutMs, state, byPath, next.waiters);
    else byPath.delete(path);
    for (const waiter of waiters) waiter(result);
  };
  getChildren(client, path, Date.now() + operationTimeoutMs).then(
    (children) => settle({ ok: true, children }),
    (error: unknown) => settle({ ok: false, error }),
  );
}

const parentsInFlight = new WeakMap<Client, Map<string, Promise<string>>>();

/**
 * mkdirp of a lock's parent, one request chain per client and path at a time: a crowd's first
 * creates all fail with NO_NODE on a new key, and each making the parent itself multiplied the
 * requests by the path's depth. Joining one started earlier is safe: mkdirp is idempotent, and a
 * create that still finds no parent (a sweep in between) makes it again.
 */
export function sharedMkdirp(client: Client, path: string, operationTimeoutMs: number): Promise<string> {
  let byPath = parentsInFlight.get(client);
  if (byPath === undefined) {
    byPath = new Map();
    parentsInFlight.set(client, byPath);
  }
  const running = byPath.get(path);
  if (running !== undefined) return running;
  const made = mkdirp(client, path, Date.now() + operationTimeoutMs).finally(() => byPath.delete(path));
  byPath.set(path, made);
  return made;
}
