/**
 * A workload client in its own process (so the harness can SIGSTOP it: a GC pause or a stalled VM).
 * Talks to the harness's registers over the fork IPC channel.
 */
import type { Interval } from './history.js';
import { runClient } from './election-worker.js';
import type { RegisterPort, WorkerConfig } from './workload.js';

type Reply = { id: number; plain?: number; fenced?: number };
let nextId = 0;
const waiting = new Map<number, (r: Reply) => void>();
process.on('message', (m: unknown) => {
  const msg = m as { type: string } & Reply & { config?: WorkerConfig };
  if (msg.type === 'start' && msg.config) void start(msg.config);
  else if (msg.type === 'reply') {
    waiting.get(msg.id)?.(msg);
    waiting.delete(msg.id);
  }
});

function ask(body: Record<string, unknown>): Promise<Reply> {
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    process.send?.({ ...body, id });
  });
}

const port: RegisterPort = {
  async read() {
    const r = await ask({ type: 'read' });
    return { plain: r.plain ?? 0, fenced: r.fenced ?? 0 };
  },
  async write(client, fence, plain, fenced) {
    await ask({ type: 'write', client, fence: fence ?? null, plain, fenced });
  },
  record(interval: Interval) {
    process.send?.({ type: 'interval', interval });
  },
  acquired() {
    process.send?.({ type: 'acquired' });
  },
};

async function start(config: WorkerConfig): Promise<void> {
  try {
    await runClient(config, port);
    process.send?.({ type: 'done' }, () => process.exit(0));
  } catch (error) {
    process.send?.({ type: 'failed', message: String(error) }, () => process.exit(1));
  }
}
// The harness is gone (killed, crashed): a worker in a session of its own would live on otherwise.
process.on('disconnect', () => process.exit(1));
process.send?.({ type: 'ready' });
