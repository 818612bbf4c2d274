import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const fixture = new URL('./fixtures/replica.mjs', import.meta.url);
const replicaCount = 3;

/** What three replicas of one schedule did over a window of whole-second ticks. */
export interface ReplicaRun {
  readonly name: string;
  /** The window's ticks, as ISO times. */
  readonly window: readonly string[];
  /** The ticks appended to the shared file that fall in the window, one per run, in file order. */
  readonly runs: readonly string[];
  /** Per window tick, what each replica reported ('ran' or 'skipped'). */
  readonly reports: ReadonlyMap<string, readonly string[]>;
}

/**
 * Starts three replica processes of `integration` on `url`, each with its own LockClient and an
 * every-second schedule of one job, and watches `ticks` whole-second ticks that begin once all three
 * are up. Ends when every replica has reported every tick of the window, or at a deadline past the
 * window (a replica whose scheduler drops a tick reports nothing for it); then stops them.
 */
export async function runReplicas(integration: string, url: string, ticks: number): Promise<ReplicaRun> {
  const dir = await mkdtemp(join(tmpdir(), 'deadbolt-schedule-'));
  const file = join(dir, 'ticks.txt');
  const name = `job-${integration}-${randomUUID()}`;
  const children: ChildProcess[] = [];
  const reports = new Map<string, string[]>();
  let onReport = (): void => undefined;
  try {
    const ready = Array.from({ length: replicaCount }, () => {
      const child = fork(fixture, [integration, url, name], {
        env: { ...process.env, DEADBOLT_TICKS_FILE: file },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      child.on('message', (message: unknown) => {
        if (typeof message === 'object' && message !== null && 'tick' in message && 'outcome' in message) {
          const { tick, outcome } = message as { tick: string; outcome: string };
          reports.set(tick, [...(reports.get(tick) ?? []), outcome]);
          onReport();
        }
      });
      return new Promise<void>((resolve, reject) => {
        child.once('message', (message) => (message === 'ready' ? resolve() : reject(new Error(`replica said ${String(message)}`))));
        child.once('exit', (code) => reject(new Error(`replica exited with ${code} before it was ready`)));
      });
    });
    await Promise.all(ready);
    // The first tick every replica surely schedules: the second whole second after all are up.
    const first = Math.ceil(Date.now() / 1000) * 1000 + 1000;
    const window = Array.from({ length: ticks }, (_, index) => new Date(first + index * 1000).toISOString());
    const complete = (): boolean => window.every((tick) => (reports.get(tick)?.length ?? 0) >= replicaCount);
    await new Promise<void>((resolve) => {
      const deadline = setTimeout(resolve, first + ticks * 1000 + 5_000 - Date.now());
      onReport = () => {
        if (!complete()) return;
        clearTimeout(deadline);
        resolve();
      };
    });
    await stopAll(children);
    const text = await readFile(file, 'utf8').catch(() => '');
    const inWindow = new Set(window);
    const runs = text
      .split('\n')
      .map((line) => line.split(' ')[0] ?? '')
      .filter((tick) => inWindow.has(tick));
    return { name, window, runs, reports: new Map(window.map((tick) => [tick, reports.get(tick) ?? []])) };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

async function stopAll(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.send('stop');
        }),
    ),
  );
}
