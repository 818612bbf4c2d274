import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

/** The built bin, run with node as an operator's shell would run `deadbolt`. */
export const binPath = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running `deadbolt`: its output so far, its exit, and a way to wait for a line it prints. */
export interface CliProcess {
  readonly process: ChildProcess;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<Exit>;
  /** Resolves when stdout contains `text`; rejects if the process exits first or after `deadlineMs`. */
  waitForStdout(text: string, deadlineMs?: number): Promise<void>;
}

const running = new Set<ChildProcess>();

// A test that fails half-way must not leave a deadbolt (holding a lock) or its command behind.
afterEach(() => {
  for (const child of running) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // The group is already gone.
    }
  }
  running.clear();
});

/** Starts `node dist/bin.js ...args` with `env` added to a clean environment (no DEADBOLT_URL from the caller). */
export function startCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): CliProcess {
  const { DEADBOLT_URL: _url, DEADBOLT_FENCE: _fence, DEADBOLT_KEY: _key, ...inherited } = process.env;
  // Its own process group, so a failed test can kill deadbolt and its command together (see below).
  const child = spawn(process.execPath, [binPath, ...args], {
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.add(child);
  child.once('close', () => running.delete(child));
  let out = '';
  let err = '';
  let closed = false;
  const watchers = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (const watcher of watchers) watcher();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      closed = true;
      resolve({ code, signal, stdout: out, stderr: err });
      for (const watcher of watchers) watcher();
    });
  });
  return {
    process: child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForStdout: (text, deadlineMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => finish(new Error(`no "${text}" on stdout within ${deadlineMs} ms; stdout: ${out}; stderr: ${err}`)),
          deadlineMs,
        );
        const check = (): void => {
          if (out.includes(text)) finish();
          else if (closed) finish(new Error(`exited before printing "${text}"; stdout: ${out}; stderr: ${err}`));
        };
        const finish = (error?: Error): void => {
          clearTimeout(timer);
          watchers.delete(check);
          if (error) reject(error);
          else resolve();
        };
        watchers.add(check);
        check();
      }),
  };
}

/** Runs `deadbolt ...args` to its end. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Exit> {
  return startCli(args, env).exited;
}
