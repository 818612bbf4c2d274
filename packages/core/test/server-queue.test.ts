import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BackendUnavailableError, leaseValidUntil, ServerQueue, type AcquireRequest, type Grant } from '../src/adapter/index.js';
import { portOf, QueueServer, type PortControls } from './fixtures/queue-server.js';

/** The waiter lease of these cases: a heartbeat every 100 ms. */
const waiterLeaseMs = 300;
const key = 'k';

let server: QueueServer;
let queues: ServerQueue[];

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
  server = new QueueServer(waiterLeaseMs);
  queues = [];
});

afterEach(async () => {
  for (const queue of queues) queue.crash();
  vi.useRealTimers();
});

function client(name: string): { queue: ServerQueue; controls: PortControls } {
  const { port, controls } = portOf(server, name);
  const queue = new ServerQueue(port);
  queues.push(queue);
  return { queue, controls };
}

function request(overrides: Partial<AcquireRequest> = {}): AcquireRequest & { lost: Error[] } {
  const lost: Error[] = [];
  return { key, owner: 'o', ttlMs: 10_000, onLost: (_grant, cause) => void lost.push(cause), ...overrides, lost };
}

/** An acquire whose outcome the case can read without awaiting it. */
function track(pending: Promise<Grant | undefined>): { outcome: () => Grant | undefined | 'pending' | Error } {
  let outcome: Grant | undefined | 'pending' | Error = 'pending';
  pending.then(
    (grant) => {
      outcome = grant;
    },
    (error: unknown) => {
      outcome = error as Error;
    },
  );
  return { outcome: () => outcome };
}

const forever = (): number => Date.now() + 60_000;
const signal = (): AbortSignal => new AbortController().signal;

/** A holder on `key` from another client, so the next acquire queues. */
async function holderGrant(): Promise<Grant> {
  const { queue } = client('holder');
  const grant = await queue.acquire(request(), forever(), signal());
  if (grant === undefined) throw new Error('the holder was not granted');
  return grant;
}

describe('ServerQueue', () => {
  it('grants in FIFO order, each waiter by its message, within no re-check', async () => {
    const first = await holderGrant();
    const { queue, controls } = client('c');
    const order: string[] = [];
    const waits = ['b', 'c', 'd'].map((owner) =>
      queue.acquire(request({ owner }), forever(), signal()).then((grant) => (order.push(owner), grant)),
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(server.queued(key)).toHaveLength(3);
    server.release(key, first.token);
    await vi.advanceTimersByTimeAsync(1); // the message travels
    const b = await waits[0]!;
    server.release(key, b!.token);
    await vi.advanceTimersByTimeAsync(1);
    const c = await waits[1]!;
    server.release(key, c!.token);
    await vi.advanceTimersByTimeAsync(1);
    await waits[2];
    expect(order).toEqual(['b', 'c', 'd']);
    expect(controls.attempts).toBe(3); // the messages did it: nobody re-checked
  });

  it('takes a grant message that arrives before its queueing call answers', async () => {
    const held = await holderGrant();
    const { queue, controls } = client('c');
    let open!: () => void;
    controls.attemptGate = new Promise((resolve) => (open = resolve));
    const wait = track(queue.acquire(request(), forever(), signal()));
    server.release(key, held.token); // the server grants us in place while our reply is still on its way
    await vi.advanceTimersByTimeAsync(1); // the message is delivered
    controls.attemptGate = undefined;
    open();
    await vi.advanceTimersByTimeAsync(0);
    const grant = wait.outcome() as Grant;
    expect(grant.token).toBe(server.holder(key)?.token);
    expect(controls.attempts).toBe(1);
  });

  it('drops a grant message for a token with no queueing call in flight', async () => {
    await holderGrant();
    const { queue, controls } = client('c');
    controls.sink!.granted('c.1', 99); // a message for the token our next acquire will use, before its call is sent
    const wait = track(queue.acquire(request(), forever(), signal()));
    await vi.advanceTimersByTimeAsync(50);
    expect(wait.outcome()).toBe('pending'); // not granted by a message its own call never caused
    expect(server.queued(key).map((entry) => entry.token)).toEqual(['c.1']);
    expect(queue.size).toBe(1);
  });

  it('at the deadline the waiter leaves the queue and resolves undefined', async () => {
    await holderGrant();
    const { queue, controls } = client('c');
    const wait = track(queue.acquire(request(), Date.now() + 250, signal()));
    await vi.advanceTimersByTimeAsync(200);
    expect(wait.outcome()).toBe('pending');
    expect(server.queued(key)).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(60);
    expect(wait.outcome()).toBeUndefined();
    expect(server.queued(key)).toEqual([]);
    expect(controls.leaves).toBe(1);
    expect(queue.size).toBe(0);
  });

  it('an abort leaves the queue at once and resolves undefined', async () => {
    await holderGrant();
    const { queue } = client('c');
    const abort = new AbortController();
    const wait = track(queue.acquire(request(), forever(), abort.signal));
    await vi.advanceTimersByTimeAsync(0);
    expect(server.queued(key)).toHaveLength(1);
    abort.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(wait.outcome()).toBeUndefined();
    expect(server.queued(key)).toEqual([]);
    expect(queue.size).toBe(0);
  });

  it('close() leaves the queue for every waiter and rejects them with the closed error; later acquires reject before any call', async () => {
    await holderGrant();
    const { queue, controls } = client('c');
    const waits = [
      track(queue.acquire(request(), forever(), signal())),
      track(queue.acquire(request({ owner: 'p' }), forever(), signal())),
    ];
    await vi.advanceTimersByTimeAsync(0);
    expect(server.queued(key)).toHaveLength(2);
    await queue.close();
    await vi.advanceTimersByTimeAsync(0);
    expect(server.queued(key)).toEqual([]);
    for (const wait of waits) {
      const error = wait.outcome() as BackendUnavailableError;
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect(error.message).toContain('the backend is closed');
    }
    const attempts = controls.attempts;
    await expect(queue.acquire(request(), forever(), signal())).rejects.toBeInstanceOf(BackendUnavailableError);
    expect(controls.attempts).toBe(attempts);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('crash() sends nothing: the waiter resolves undefined, its entry stays until the waiter lease drops it, no timer is left', async () => {
    const held = await holderGrant();
    const { queue, controls } = client('c');
    const wait = track(queue.acquire(request(), forever(), signal()));
    await vi.advanceTimersByTimeAsync(0);
    queue.crash();
    await vi.advanceTimersByTimeAsync(0);
    expect(wait.outcome()).toBeUndefined();
    expect(controls.leaves).toBe(0);
    expect(server.queued(key)).toHaveLength(1);
    const heartbeats = controls.heartbeats;
    await vi.advanceTimersByTimeAsync(waiterLeaseMs + 1);
    expect(controls.heartbeats).toBe(heartbeats);
    expect(server.queued(key)).toEqual([]); // dropped by its deadline on the server
    server.release(key, held.token);
    expect(server.holder(key)).toBeUndefined(); // the dead entry was not granted
  });

  it('the heartbeat tick keeps a queued entry alive past its waiter lease', async () => {
    await holderGrant();
    const { queue, controls } = client('c');
    const wait = track(queue.acquire(request(), forever(), signal()));
    await vi.advanceTimersByTimeAsync(3 * waiterLeaseMs);
    expect(controls.heartbeats).toBeGreaterThanOrEqual(6);
    expect(server.queued(key)).toHaveLength(1);
    expect(server.queued(key)[0]!.deadline).toBeGreaterThan(Date.now());
    expect(wait.outcome()).toBe('pending');
    expect(queue.size).toBe(1);
  });

  it('a grant by message carries the short claim and is extended to its ttl at the next tick', async () => {
    const held = await holderGrant();
    const { queue } = client('c');
    const pending = queue.acquire(request(), forever(), signal());
    await vi.advanceTimersByTimeAsync(0);
    const queuedAt = Date.now();
    server.release(key, held.token);
    await vi.advanceTimersByTimeAsync(1);
    const grant = (await pending)!;
    expect(grant.validUntil).toBe(leaseValidUntil(queuedAt, waiterLeaseMs)); // min(ttl, waiter lease) from when we were seen queued
    await vi.advanceTimersByTimeAsync(100);
    expect(server.holder(key)!.expiresAt).toBeGreaterThan(Date.now() + waiterLeaseMs);
    expect(grant.validUntil).toBeGreaterThan(Date.now() + 9_000);
  });

  it('a short claim that runs out before its extension is reported lost', async () => {
    const held = await holderGrant();
    const { queue, controls } = client('c');
    const asked = request();
    const pending = queue.acquire(asked, forever(), signal());
    await vi.advanceTimersByTimeAsync(0);
    server.release(key, held.token);
    await vi.advanceTimersByTimeAsync(1);
    const grant = (await pending)!;
    controls.extendFails = true; // the tick's extension gets no answer...
    await vi.advanceTimersByTimeAsync(100);
    controls.extendFails = false;
    server.expire(key); // ...and the server's claim runs out meanwhile
    await vi.advanceTimersByTimeAsync(100);
    expect(asked.lost.map((error) => error.message)).toEqual(['the hold granted by the queue expired before it could be extended']);
    expect(server.holder(key)?.token).not.toBe(grant.token);
  });

  it('a grant message with too little claim left is extended before the acquire resolves', async () => {
    const held = await holderGrant();
    const { queue, controls } = client('c');
    controls.heartbeatFails = true; // we are not seen queued again: the claim counts from the first call
    const queuedAt = Date.now();
    const asked = request();
    const pending = queue.acquire(asked, forever(), signal());
    await vi.advanceTimersByTimeAsync(150);
    server.messages = 'hold';
    server.release(key, held.token);
    const extendedAt = Date.now();
    server.flush(); // the claim has 145 ms left, under two heartbeats: no tick would come in time
    const grant = (await pending)!;
    expect(leaseValidUntil(queuedAt, waiterLeaseMs) - extendedAt).toBeLessThan(2 * queue.heartbeatMs);
    expect(grant.validUntil).toBe(leaseValidUntil(extendedAt, asked.ttlMs));
    expect(server.holder(key)).toMatchObject({ token: grant.token, expiresAt: extendedAt + asked.ttlMs });
  });

  it('a grant message that cannot be extended in time does not resolve the acquire: it waits on, by re-checks', async () => {
    const held = await holderGrant();
    const { queue, controls } = client('c');
    controls.heartbeatFails = true;
    const wait = track(queue.acquire(request(), forever(), signal()));
    await vi.advanceTimersByTimeAsync(150);
    server.messages = 'hold';
    server.release(key, held.token);
    controls.extendFails = true;
    server.flush();
    await vi.advanceTimersByTimeAsync(0);
    expect(wait.outcome()).toBe('pending'); // never granted on a claim about to run out unextended
    expect(queue.size).toBe(1);
  });

  it('a re-check asked for while one runs runs once after it, never beside it', async () => {
    await holderGrant();
    const { queue, controls } = client('c');
    void queue.acquire(request(), forever(), signal());
    await vi.advanceTimersByTimeAsync(0);
    let open!: () => void;
    controls.attemptGate = new Promise((resolve) => (open = resolve));
    // The channel breaks three times while the first re-check is on its way.
    for (let index = 0; index < 3; index += 1) controls.sink!.broken();
    await vi.advanceTimersByTimeAsync(0);
    expect(controls.attempts).toBe(2);
    expect(controls.maxAttemptsInFlight).toBe(1);
    controls.attemptGate = undefined;
    open();
    await vi.advanceTimersByTimeAsync(0);
    expect(controls.attempts).toBe(3); // the three asks ran once, after the first answered
    expect(controls.maxAttemptsInFlight).toBe(1);
  });

  it('a grant found by a call (re-check or heartbeat) is bounded by leaseValidUntil from that call; one taken at once, from its answer', async () => {
    const { queue: holderQueue, controls: holderControls } = client('holder');
    holderControls.reportSentAt = true;
    const sentAt = Date.now();
    const first = (await holderQueue.acquire(request({ ttlMs: 200 }), forever(), signal()))!;
    expect(first.validUntil).toBe(leaseValidUntil(sentAt, 200));
    const { queue } = client('c');
    server.messages = 'drop'; // no message: the holder's expiry is found by a call
    let grantedAt = 0;
    const pending = queue.acquire(request(), forever(), signal()).then((grant) => ((grantedAt = Date.now()), grant));
    await vi.advanceTimersByTimeAsync(400);
    const grant = (await pending)!;
    expect(grant.token).toBe(server.holder(key)?.token);
    expect(grant.validUntil).toBe(leaseValidUntil(grantedAt, 10_000));
  });

  it('a wait queued before its subscription was live re-checks once the subscription is', async () => {
    const held = await holderGrant();
    const { queue, controls } = client('c');
    let live!: () => void;
    controls.listening = new Promise((resolve) => (live = resolve));
    server.messages = 'drop'; // sent while we were not listening yet
    const wait = track(queue.acquire(request(), forever(), signal()));
    await vi.advanceTimersByTimeAsync(0);
    server.release(key, held.token);
    await vi.advanceTimersByTimeAsync(1);
    expect(wait.outcome()).toBe('pending');
    live();
    await vi.advanceTimersByTimeAsync(0);
    expect((wait.outcome() as Grant).token).toBe(server.holder(key)?.token);
    expect(controls.attempts).toBe(2);
  });

  it('a grant whose message was lost is found by the next heartbeat, not at the holder lease', async () => {
    const held = await holderGrant();
    const { queue } = client('c');
    server.messages = 'drop';
    const wait = track(queue.acquire(request(), forever(), signal()));
    await vi.advanceTimersByTimeAsync(0);
    server.release(key, held.token);
    await vi.advanceTimersByTimeAsync(queue.heartbeatMs + 1);
    expect((wait.outcome() as Grant).token).toBe(server.holder(key)?.token);
  });

  it('a heartbeat that finds the entry gone makes the waiter look again at once, and queue anew', async () => {
    const held = await holderGrant();
    const { queue, controls } = client('c');
    const wait = track(queue.acquire(request(), forever(), signal()));
    await vi.advanceTimersByTimeAsync(0);
    const [entry] = server.queued(key);
    server.leave(key, entry!.token); // purged on the server (as by a lapse of the waiter lease)
    await vi.advanceTimersByTimeAsync(queue.heartbeatMs + 1);
    expect(controls.attempts).toBe(2);
    expect(server.queued(key).map((queued) => queued.token)).toEqual([entry!.token]);
    expect(wait.outcome()).toBe('pending');
    void held;
  });
});
