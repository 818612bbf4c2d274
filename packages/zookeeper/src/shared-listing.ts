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
  /** Callers that asked while a listing was in flight: they share the one sent when it is answered. */
  next:
    | { readonly answer: Promise<string[]>; readonly resolve: (children: string[]) => void; readonly reject: (error: unknown) => void }
    | undefined;
}

const listings = new WeakMap<Client, Map<string, PathListing>>();

export function sharedGetChildren(client: Client, path: string, operationTimeoutMs: number): Promise<string[]> {
  let byPath = listings.get(client);
  if (byPath === undefined) {
    byPath = new Map();
    listings.set(client, byPath);
  }
  const state = byPath.get(path);
  // None in flight: the caller's own request, sent at once (no promise of ours around it).
  if (state === undefined) return send(client, path, operationTimeoutMs, byPath);
  if (state.next === undefined) {
    let resolve!: (children: string[]) => void;
    let reject!: (error: unknown) => void;
    const answer = new Promise<string[]>((onAnswer, onError) => {
      resolve = onAnswer;
      reject = onError;
    });
    state.next = { answer, resolve, reject };
  }
  return state.next.answer;
}

function send(client: Client, path: string, operationTimeoutMs: number, byPath: Map<string, PathListing>): Promise<string[]> {
  const state: PathListing = { next: undefined };
  byPath.set(path, state);
  const listing = getChildren(client, path, Date.now() + operationTimeoutMs);
  // Registered before the caller's own continuation: the next listing leaves before anyone acts on this one.
  const answered = (): void => {
    const next = state.next;
    if (next === undefined) byPath.delete(path);
    else send(client, path, operationTimeoutMs, byPath).then(next.resolve, next.reject);
  };
  listing.then(answered, answered);
  return listing;
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
