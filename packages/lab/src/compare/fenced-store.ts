/**
 * The fenced register: a register kept in a real data store whose every write goes through
 * `@deadbolt/fence`. The store, not the harness and not the lock, decides whether a write lands:
 * a stale fence comes back as StaleFenceError, which is counted as refused. The harness only keeps
 * the books (which writes were stale by its own count) so that a guard that let a stale write
 * through would show as "stale writes accepted (fenced)", never be hidden.
 */
import { createMemoryFenceGuard, fencedWrite, StaleFenceError } from '@deadbolt/fence';
import { now, type FencedStoreReport, type WriteRecord } from './history.js';

/** The stores' names for the pages: short (a matrix cell) and long (what checks the fence). */
export const fencedStoreNames: Readonly<Record<FencedStoreReport['kind'], { readonly short: string; readonly long: string }>> = {
  postgres: { short: 'PostgreSQL', long: 'PostgreSQL, admitFence in the write transaction' },
  redis: { short: 'Redis', long: 'Redis, fencedSet' },
  memory: { short: 'in-memory', long: 'memory, createMemoryFenceGuard' },
};

/** What one store does; the guarded write is the only part that differs between stores. */
export interface FenceCheckedRegister {
  read(): Promise<number>;
  /** Writes `value` through @deadbolt/fence's check; a stale fence throws StaleFenceError and writes nothing. */
  write(fence: number, value: number): Promise<void>;
  /** What the store itself holds for the register: its value and the highest fence it recorded. */
  final(): Promise<{ value: number; fence: number | undefined }>;
  close(): Promise<void>;
}

export class FencedStore {
  readonly writes: WriteRecord[] = [];
  /** The highest fence the store admitted, by the harness's own count (to label stale writes). */
  private highest = -Infinity;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly kind: FencedStoreReport['kind'],
    readonly label: string,
    private readonly register: FenceCheckedRegister,
  ) {}

  /**
   * One operation at a time, in arrival order: the order the store decides writes in is then the
   * order they are recorded in, so the stale label (a newer fence already admitted) is exact.
   */
  private serial<T>(op: () => Promise<T>): Promise<T> {
    const result = this.queue.then(op);
    this.queue = result.catch(() => undefined);
    return result;
  }

  read(): Promise<number> {
    return this.serial(() => this.register.read());
  }

  /**
   * Sends the write to the store with `fence`. Returns whether the store took it. A write with no
   * fence (a backend that hands out none, such as Memcached) is not sent: the guard refuses a
   * missing fence before any I/O, and there is nothing for the store to check. The store's other
   * errors (a dead data server) are the harness's failure and are thrown.
   */
  write(client: string, fence: number | undefined, value: number): Promise<boolean> {
    if (fence === undefined) return Promise.resolve(false);
    return this.serial(async () => {
      const at = now();
      const stale = fence < this.highest;
      try {
        await this.register.write(fence, value);
      } catch (error) {
        if (!(error instanceof StaleFenceError)) throw error;
        this.writes.push({ client, at, fence, value, accepted: false, stale });
        return false;
      }
      if (fence > this.highest) this.highest = fence;
      this.writes.push({ client, at, fence, value, accepted: true, stale });
      return true;
    });
  }

  /** Waits for every operation sent so far, reads what the store holds, and closes the connection. */
  async finish(): Promise<FencedStoreReport> {
    try {
      const { value, fence } = await this.serial(() => this.register.final());
      return { kind: this.kind, label: this.label, finalValue: value, finalFence: fence };
    } finally {
      await this.register.close();
    }
  }
}

/**
 * The register in this process's memory behind `createMemoryFenceGuard()`: for the harness's own
 * tests, which run on the in-memory lock backend and need no server.
 */
export function memoryRegister(): FenceCheckedRegister {
  const guard = createMemoryFenceGuard();
  const resource = 'register';
  let value = 0;
  let fence: number | undefined;
  return {
    read: async () => value,
    write: async (f, v) => {
      await fencedWrite(guard, resource, f, () => {
        value = v;
        fence = f;
      });
    },
    final: async () => ({ value, fence }),
    close: async () => {},
  };
}
