import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { assert, waitUntil } from './util.js';

/** Resource kinds that keep a process alive and that a lock client could leak. */
const COUNTED = new Set(['TCPWrap', 'Timeout', 'PipeWrap', 'TCPSocketWrap', 'TTYWrap']);

/** Sockets and timers alive right now (process.getActiveResourcesInfo). */
export function handleCount(): number {
  return process.getActiveResourcesInfo().filter((kind) => COUNTED.has(kind)).length;
}

/** The same kinds as async_hooks names them. */
const TRACKED = new Set(['Timeout', 'TCPWRAP', 'PIPEWRAP', 'TTYWRAP']);
const scope = new AsyncLocalStorage<HandleTracker | undefined>();

interface Opened {
  readonly type: string;
  readonly resource: { hasRef?(): boolean; _destroyed?: boolean; getpeername?(into: object): unknown };
  /** When it was opened, relative to the tracker's start: a leak's age tells which step opened it. */
  readonly atMs: number;
}

/**
 * Runs `work` outside any tracker: what it opens is nobody's leak (the suite's fault hooks: a
 * container's pause is an HTTP call to the engine, a process server's restart spawns a process).
 */
export function untracked<T>(work: () => Promise<T>): Promise<T> {
  return scope.run(undefined, work);
}

/**
 * The sockets and timers opened by one piece of work (its async flow, and whatever that flow's
 * sockets and timers go on to open), still open now. A count of the process's handles before and
 * after cannot tell them apart from the test runner's own: one runner timer ending inside the
 * window hid a leaked keep-alive interval from the count.
 */
export class HandleTracker {
  readonly #opened = new Map<number, Opened>();
  readonly #start = Date.now();
  readonly #hook = createHook({
    init: (id, type, _trigger, resource) => {
      if (TRACKED.has(type) && scope.getStore() === this)
        this.#opened.set(id, { type, resource: resource as Opened['resource'], atMs: Date.now() - this.#start });
    },
    destroy: (id) => {
      this.#opened.delete(id);
    },
  });

  /** Runs `work` with tracking on; tracking stays on (to see closes) until stop(). */
  run<T>(work: () => Promise<T>): Promise<T> {
    this.#hook.enable();
    return scope.run(this, work);
  }

  /** What is still open and would keep the process alive (an unref'd timer would not). */
  open(): string[] {
    const open: string[] = [];
    for (const { type, resource } of this.#opened.values()) {
      if (type === 'Timeout' && (resource._destroyed === true || resource.hasRef?.() === false)) continue;
      open.push(type);
    }
    return open;
  }

  /** What open() lists, with each socket's peer and when it was opened: for a failure's message. */
  describeOpen(): string {
    const open = new Set(this.open());
    const described: string[] = [];
    for (const { type, resource, atMs } of this.#opened.values()) {
      if (!open.has(type)) continue;
      if (type === 'Timeout' && (resource._destroyed === true || resource.hasRef?.() === false)) continue;
      const peer: { address?: string; port?: number } = {};
      resource.getpeername?.(peer);
      const to = peer.address === undefined ? '' : ` to ${peer.address}:${peer.port}`;
      described.push(`${type}${to} opened at +${atMs} ms`);
    }
    return described.join(', ');
  }

  stop(): void {
    this.#hook.disable();
    this.#opened.clear();
  }
}

/**
 * Runs `work`, which makes clients and closes them, then asserts that within `withinMs` the process
 * has no more handles than before and that nothing `work` opened (its clients' sockets and timers,
 * and whatever those opened in turn) is still open: the count alone can miss a leak when one of the
 * runner's own timers ends in the same window.
 */
export async function assertClosesClean(what: string, work: () => Promise<void>, withinMs = 2_000): Promise<void> {
  const before = handleCount();
  const tracker = new HandleTracker();
  try {
    await tracker.run(work);
    const settled = await waitUntil(() => handleCount() <= before && tracker.open().length === 0, withinMs, 20);
    assert(
      settled,
      `${what}: handles ${handleCount()} after close, ${before} before (${process.getActiveResourcesInfo().join(', ')}); opened by the clients and still open: ${tracker.describeOpen() || 'none'}`,
    );
  } finally {
    tracker.stop();
  }
}
