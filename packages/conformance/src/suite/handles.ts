import { AsyncLocalStorage, createHook } from 'node:async_hooks';

/** Resource kinds that keep a process alive and that a lock client could leak. */
const COUNTED = new Set(['TCPWrap', 'Timeout', 'PipeWrap', 'TCPSocketWrap', 'TTYWrap']);

/** Sockets and timers alive right now (process.getActiveResourcesInfo). */
export function handleCount(): number {
  return process.getActiveResourcesInfo().filter((kind) => COUNTED.has(kind)).length;
}

/** The same kinds as async_hooks names them. */
const TRACKED = new Set(['Timeout', 'TCPWRAP', 'PIPEWRAP', 'TTYWRAP']);
const scope = new AsyncLocalStorage<HandleTracker>();

interface Opened {
  readonly type: string;
  readonly resource: { hasRef?(): boolean; _destroyed?: boolean };
}

/**
 * The sockets and timers opened by one piece of work (its async flow, and whatever that flow's
 * sockets and timers go on to open), still open now. A count of the process's handles before and
 * after cannot tell them apart from the test runner's own: one runner timer ending inside the
 * window hid a leaked keep-alive interval from the count.
 */
export class HandleTracker {
  readonly #opened = new Map<number, Opened>();
  readonly #hook = createHook({
    init: (id, type, _trigger, resource) => {
      if (TRACKED.has(type) && scope.getStore() === this) this.#opened.set(id, { type, resource: resource as Opened['resource'] });
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

  stop(): void {
    this.#hook.disable();
    this.#opened.clear();
  }
}
