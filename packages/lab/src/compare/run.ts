import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { now, type FaultWindow, type History, type Interval } from './history.js';
import { RegisterOpLog } from './register-ops.js';
import { openFencedStore, type FencedStoreKind } from './data-servers.js';
import type { FencedStore } from './fenced-store.js';
import { PlainRegister } from './stores.js';
import { runClient } from './election-worker.js';
import type { RegisterPort, WorkerConfig } from './workload.js';
import { trackWorker, untrackWorker } from './worker-groups.js';

export interface RunSpec {
  readonly url: string;
  readonly options?: Readonly<Record<string, unknown>>;
  readonly clients: number;
  /** How many of the clients run in child processes (the first ones). */
  readonly childClients: number;
  readonly durationMs: number;
  readonly ttlMs: number;
  readonly holdMs: number;
  /** Per-client options override (e.g. a skewed clock or a proxied URL), by index. */
  readonly perClient?: (index: number) => Partial<WorkerConfig>;
  /** For a semaphore: how many holders may be inside at once (the checker's bound). */
  readonly permits?: number;
  /** The other clients start once c0 has first entered a critical section, so a nemesis aimed at c0's hold finds one. */
  readonly othersStartAfterFirstHold?: boolean;
  /**
   * Where the fenced register lives (data-servers.ts: fencedStoreFor(backend) picks a row's). Its
   * writes go through `@deadbolt/fence`; the plain register stays in the harness.
   */
  readonly fencedStore: FencedStoreKind;
}

export interface RunContext {
  readonly children: ChildProcess[];
  /** Marks a fault window on the timeline around `fn`. */
  fault<T>(label: string, fn: () => Promise<T>): Promise<T>;
  readonly startedAt: number;
  /** Resolves when child `index` next enters a critical section. */
  nextHold(index: number): Promise<void>;
}

/** Runs the workload for durationMs while `nemesis` acts, and returns the history. */
export async function runWorkload(spec: RunSpec, nemesis: (ctx: RunContext) => Promise<void>): Promise<History> {
  const key = `compare-${Math.random().toString(36).slice(2, 8)}`;
  const fenced = await openFencedStore(spec.fencedStore, key);
  let history: Omit<History, 'fencedStore'>;
  try {
    history = await runWith(spec, key, fenced, nemesis);
  } catch (error) {
    await fenced.finish().catch(() => undefined);
    throw error;
  }
  // What the store holds once no client can write any more (finish also closes the connection).
  return { ...history, fencedStore: await fenced.finish() };
}

async function runWith(
  spec: RunSpec,
  key: string,
  fenced: FencedStore,
  nemesis: (ctx: RunContext) => Promise<void>,
): Promise<Omit<History, 'fencedStore'>> {
  const holds = new EventEmitter();
  const plain = new PlainRegister();
  const plainOps = new RegisterOpLog();
  const intervals: Interval[] = [];
  const faults: FaultWindow[] = [];
  // One port per in-process client, so the plain register's log knows who called.
  const portFor = (name: string): RegisterPort => ({
    read: async () => {
      const p = plainOps.read(name, () => plain.read());
      return { plain: p, fenced: await fenced.read() };
    },
    write: async (client, fence, p, f) => {
      plainOps.write(client, p, () => plain.write(client, fence, p));
      await fenced.write(client, fence, f);
    },
    record: (i) => {
      intervals.push(i);
    },
    acquired: (client) => {
      holds.emit(client);
    },
  });
  const startedAt = now();
  const until = startedAt + spec.durationMs;
  const config = (i: number): WorkerConfig => ({
    name: `c${i}`,
    url: spec.url,
    key,
    ttlMs: spec.ttlMs,
    holdMs: spec.holdMs,
    waitMs: spec.ttlMs * 3,
    until,
    ...(spec.options ? { options: spec.options } : {}),
    ...(spec.perClient?.(i) ?? {}),
  });
  const children: ChildProcess[] = [];
  const done: Promise<void>[] = [];
  const startClient = (i: number): void => {
    if (i < spec.childClients) {
      const { child, finished } = startChild(config(i), { plain, fenced, plainOps }, intervals, () => holds.emit(`c${i}`));
      children.push(child);
      done.push(finished);
    } else {
      done.push(runClient(config(i), portFor(`c${i}`)));
    }
  };
  const ctx: RunContext = {
    children,
    startedAt,
    nextHold: async (index) => {
      await once(holds, `c${index}`);
    },
    async fault(label, fn) {
      const start = now();
      try {
        return await fn();
      } finally {
        faults.push({ label, start, end: now() });
      }
    },
  };
  let nemesisError: unknown;
  try {
    // The first hold's listener is registered before c0 starts, so it cannot slip past.
    const firstHold = spec.othersStartAfterFirstHold ? once(holds, 'c0') : undefined;
    startClient(0);
    if (firstHold)
      await Promise.race([
        firstHold,
        done[0]!.then(() => {
          throw new Error('c0 finished before it ever held the lock');
        }),
      ]);
    for (let i = 1; i < spec.clients; i++) startClient(i);
    await nemesis(ctx);
  } catch (error) {
    nemesisError = error;
  }
  // Deadline: a child that never finishes is killed, never left behind.
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((r) => {
    timer = setTimeout(r, Math.max(0, until - now()) + spec.ttlMs * 4 + 10_000);
  });
  // allSettled: one failed worker must not leave the others (or their children) running.
  const settled = await Promise.race([Promise.allSettled(done), deadline.then(() => [] as PromiseSettledResult<void>[])]);
  clearTimeout(timer);
  for (const c of children)
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    }
  if (nemesisError) throw nemesisError;
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return {
    ...(spec.permits !== undefined ? { permits: spec.permits } : {}),
    intervals,
    faults,
    plainWrites: plain.writes,
    fencedWrites: fenced.writes,
    plainOps: plainOps.ops,
    startedAt,
    endedAt: Math.max(until, now()),
  };
}

function startChild(
  cfg: WorkerConfig,
  { plain, fenced, plainOps }: { plain: PlainRegister; fenced: FencedStore; plainOps: RegisterOpLog },
  intervals: Interval[],
  onAcquired: () => void,
): { child: ChildProcess; finished: Promise<void> } {
  // Under vitest this module is the .ts source: the child runs the built worker from dist.
  const here = fileURLToPath(import.meta.url);
  const script = here.endsWith('.ts')
    ? fileURLToPath(new URL('../../dist/compare/child-worker.js', import.meta.url))
    : fileURLToPath(new URL('./child-worker.js', import.meta.url));
  // detached: a process group (and session) of its own, so a pause does not depend on how the
  // harness was launched (see worker-groups.ts).
  const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], detached: true });
  const pid = child.pid;
  if (pid !== undefined) trackWorker(pid);
  let clean = false;
  const finished = new Promise<void>((resolve, reject) => {
    child.on('exit', (code, signal) => {
      if (pid !== undefined) untrackWorker(pid);
      if (clean || signal === 'SIGKILL') resolve();
      else reject(new Error(`compare worker ${cfg.name} exited with ${code ?? signal} before finishing (${script})`));
    });
    child.on('message', (m: unknown) => {
      const msg = m as {
        type: string;
        id: number;
        client: string;
        fence: number | null;
        plain: number;
        fenced: number;
        interval: Interval;
      };
      // The fenced store answers asynchronously; a failure of it (a dead data server) fails the run.
      const answer = (reply: Promise<Record<string, unknown>>): void => {
        reply.then(
          // A worker killed meanwhile (the run's deadline) has no channel left: nothing to answer.
          (body) => {
            if (child.connected) child.send({ type: 'reply', id: msg.id, ...body }, () => undefined);
          },
          (error: unknown) => {
            reject(error);
            child.kill('SIGKILL');
          },
        );
      };
      if (msg.type === 'done') clean = true;
      else if (msg.type === 'ready') child.send({ type: 'start', config: cfg });
      else if (msg.type === 'acquired') onAcquired();
      else if (msg.type === 'read') {
        // The plain register is read as the message arrives, the fenced store after it.
        const p = plainOps.read(cfg.name, () => plain.read());
        answer(fenced.read().then((f) => ({ plain: p, fenced: f })));
      } else if (msg.type === 'write') {
        const fence = msg.fence ?? undefined;
        plainOps.write(msg.client, msg.plain, () => plain.write(msg.client, fence, msg.plain));
        answer(fenced.write(msg.client, fence, msg.fenced).then(() => ({})));
      } else if (msg.type === 'interval') intervals.push(msg.interval);
    });
  });
  return { child, finished };
}
