import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { trackProcessGroup, trackTempDir, untrackProcessGroup, untrackTempDir } from './exit-cleanup.js';
import { descendantPids, fullyStopped } from './process-tree.js';
import { waitUntilReady } from './ready.js';
import type { ServerHandle, ServerKind } from './types.js';

/** Everything needed to (re)spawn one server binary. */
export interface ProcessServerSpec {
  readonly kind: ServerKind;
  readonly command: string;
  readonly args: readonly string[];
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** A temp dir owned by this server (data, config, log); removed by stop(). */
  readonly dir: string;
  readonly uid?: number;
  readonly gid?: number;
  readonly env?: NodeJS.ProcessEnv;
  /** The signal for a clean shutdown (postgres: SIGINT, its "fast shutdown"). Default SIGTERM. */
  readonly stopSignal?: NodeJS.Signals;
  /** Answers true once the server serves its protocol. */
  readonly probe: (timeoutMs: number) => Promise<boolean>;
  readonly readyTimeoutMs: number;
}

type State = 'down' | 'up' | 'paused' | 'stopped';

/** How long a clean shutdown may take before the process group gets SIGKILL. */
const stopGraceMs = 10_000;
/** How long pause() waits for every thread of the server to have stopped. */
const pauseBoundMs = 2_000;

/**
 * A server binary spawned in its own process group (detached: setsid). SIGSTOP/SIGCONT freeze and
 * thaw the whole server as a paused host would: the group and every descendant process (PostgreSQL's
 * backends and auxiliary processes run in sessions of their own). Faults are signals; restart
 * respawns on the same port and data directory.
 */
export class ProcessServer implements ServerHandle {
  readonly provider = 'process' as const;
  readonly kind: ServerKind;
  readonly host: string;
  readonly port: number;
  readonly url: string;
  private state: State = 'down';
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private exitReason: string | undefined;
  private stopping: Promise<void> | undefined;

  constructor(private readonly spec: ProcessServerSpec) {
    this.kind = spec.kind;
    this.host = spec.host;
    this.port = spec.port;
    this.url = spec.url;
    trackTempDir(spec.dir);
  }

  /** The log file the server writes (stdout and stderr). */
  get logPath(): string {
    return join(this.spec.dir, 'server.log');
  }

  /** Spawns without waiting for readiness (an ensemble spawns all members, then waits). */
  spawnProcess(): void {
    if (this.state === 'stopped') throw new Error(`${this.describe()} was stopped for good`);
    if (this.state !== 'down') return;
    const log = openSync(this.logPath, 'a');
    try {
      const child = spawn(this.spec.command, [...this.spec.args], {
        cwd: this.spec.dir,
        detached: true,
        stdio: ['ignore', log, log],
        env: { ...process.env, ...this.spec.env },
        ...(this.spec.uid !== undefined ? { uid: this.spec.uid } : {}),
        ...(this.spec.gid !== undefined ? { gid: this.spec.gid } : {}),
      });
      this.child = child;
      this.exitReason = undefined;
      this.exited = new Promise((resolve) => {
        child.once('exit', (code, signal) => {
          this.exitReason = `exited with ${signal ?? `code ${code}`}`;
          if (child.pid !== undefined) untrackProcessGroup(child.pid);
          resolve();
        });
        child.once('error', (error) => {
          this.exitReason = `could not spawn ${this.spec.command}: ${error.message}`;
          resolve();
        });
      });
      if (child.pid !== undefined) trackProcessGroup(child.pid);
      // A forgotten server must not keep the test process alive; exit-cleanup kills it.
      child.unref();
      this.state = 'up';
    } finally {
      closeSync(log);
    }
  }

  async waitReady(): Promise<void> {
    await waitUntilReady(this.spec.probe, {
      what: this.describe(),
      timeoutMs: this.spec.readyTimeoutMs,
      failed: () => this.exitReason,
      diagnostics: () => this.logTail(),
    });
  }

  async start(): Promise<void> {
    this.spawnProcess();
    await this.waitReady();
  }

  async up(): Promise<void> {
    if (this.state === 'up' || this.state === 'paused') return;
    await this.start();
  }

  async down(): Promise<void> {
    const child = this.child;
    if (this.state === 'down' || this.state === 'stopped' || child?.pid === undefined) {
      if (this.state !== 'stopped') this.state = 'down';
      return;
    }
    const pgid = child.pid;
    if (this.exitReason === undefined) {
      signalQuietly(pgid, this.spec.stopSignal ?? 'SIGTERM');
      // A stopped process only acts on the signal once it runs again (a paused server's children too).
      signalQuietly(-pgid, 'SIGCONT');
      for (const pid of descendantPids(pgid)) signalQuietly(pid, 'SIGCONT');
      let timer: NodeJS.Timeout | undefined;
      const killed = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          signalQuietly(-pgid, 'SIGKILL');
          resolve();
        }, stopGraceMs);
      });
      await Promise.race([this.exited, killed]);
      clearTimeout(timer);
      await this.exited;
    }
    // Children the leader left behind (none normally) go with the group.
    const leftBehind = descendantPids(pgid);
    signalQuietly(-pgid, 'SIGKILL');
    for (const pid of leftBehind) signalQuietly(pid, 'SIGKILL');
    untrackProcessGroup(pgid);
    this.child = undefined;
    this.state = 'down';
  }

  async restart(): Promise<void> {
    await this.down();
    await this.up();
  }

  async pause(): Promise<void> {
    if (this.state !== 'up' || this.child?.pid === undefined) return this.requireRunning('pause');
    // The group first: a stopped postmaster forks no new backend while the rest are stopped.
    process.kill(-this.child.pid, 'SIGSTOP');
    const frozen = [this.child.pid, ...descendantPids(this.child.pid)];
    for (const pid of frozen.slice(1)) signalQuietly(pid, 'SIGSTOP');
    this.state = 'paused';
    // Paused means no thread answers any more: the signals take effect a moment later.
    const deadline = Date.now() + pauseBoundMs;
    while (!frozen.every(fullyStopped)) {
      if (Date.now() >= deadline) throw new Error(`${this.describe()}: not every thread stopped within ${pauseBoundMs} ms of SIGSTOP`);
      await delay(1);
    }
  }

  async resume(): Promise<void> {
    if (this.state !== 'paused' || this.child?.pid === undefined) return;
    for (const pid of descendantPids(this.child.pid)) signalQuietly(pid, 'SIGCONT');
    process.kill(-this.child.pid, 'SIGCONT');
    this.state = 'up';
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.down();
      this.state = 'stopped';
      rmSync(this.spec.dir, { recursive: true, force: true, maxRetries: 2 });
      untrackTempDir(this.spec.dir);
    })();
    return this.stopping;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  describe(): string {
    return `${this.kind} (process) on ${this.host}:${this.port}`;
  }

  private requireRunning(action: string): void {
    if (this.state === 'paused') return;
    throw new Error(`cannot ${action} ${this.describe()}: it is ${this.state}`);
  }

  private logTail(): string {
    try {
      return readFileSync(this.logPath, 'utf8').split('\n').slice(-30).join('\n');
    } catch {
      return '';
    }
  }
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}
