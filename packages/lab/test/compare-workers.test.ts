import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runWorkload } from '../src/compare/run.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Field `index` (1-based, as in proc(5)) of /proc/<pid>/stat. */
function statField(pid: number, index: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count from its closing parenthesis.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[index - 3]);
}

/** Resolves once `file` exists in `dir`, or rejects at the deadline (fs.watch, no polling). */
function fileAppears(dir: string, file: string, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = watch(dir, () => {
      if (existsSync(join(dir, file))) finish();
    });
    const timer = setTimeout(() => {
      watcher.close();
      reject(new Error(`${file} did not appear within ${ms} ms`));
    }, ms);
    function finish(): void {
      clearTimeout(timer);
      watcher.close();
      resolve();
    }
    if (existsSync(join(dir, file))) finish();
  });
}

describe('compare worker processes', () => {
  it('run in a process group and session of their own', async () => {
    let ids: { pgrp: number; session: number; pid: number } | undefined;
    await runWorkload(
      {
        url: 'memory://',
        clients: 1,
        childClients: 1,
        durationMs: 2000,
        ttlMs: 1000,
        holdMs: 50,
        othersStartAfterFirstHold: true,
        fencedStore: 'memory',
      },
      async (ctx) => {
        const pid = ctx.children[0]!.pid!;
        ids = { pid, pgrp: statField(pid, 5), session: statField(pid, 6) };
      },
    );
    expect(ids!.pgrp).toBe(ids!.pid);
    expect(ids!.session).toBe(ids!.pid);
    expect(statField(process.pid, 5)).not.toBe(ids!.pid);
  });

  it('a paused worker survives the launching shell exiting (no SIGHUP from an orphaned group)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deadbolt-compare-orphan-'));
    dirs.push(dir);
    const probe = fileURLToPath(new URL('./compare-pause-probe.mjs', import.meta.url));
    // set -m: the harness runs as a job in a process group of its own, as from an interactive
    // shell; the shell exits while the worker is stopped, which orphans the harness's group.
    const script = `set -m; "$0" "$1" "$2" & while [ ! -e "$2/paused" ]; do sleep 0.05; done; exit 0`;
    const shell = spawn('bash', ['-c', script, process.execPath, probe, dir], { detached: true, stdio: 'ignore' });
    shell.unref();
    await fileAppears(dir, 'result.json', 20_000);
    const result = JSON.parse(readFileSync(join(dir, 'result.json'), 'utf8')) as { ok: boolean; error?: string; intervals?: number };
    expect(result).toMatchObject({ ok: true });
    expect(result.intervals).toBeGreaterThan(0);
  }, 30_000);

  for (const withServer of [false, true]) {
    it(`an interrupted harness (SIGINT) exits (130) and takes its paused worker with it${withServer ? ", beside the server fixtures' own cleanup" : ''}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'deadbolt-compare-sigint-'));
      dirs.push(dir);
      const probe = fileURLToPath(new URL('./compare-pause-probe.mjs', import.meta.url));
      const harness = spawn(process.execPath, [probe, dir, ...(withServer ? ['with-server'] : [])], {
        stdio: 'ignore',
        env: { ...process.env, PAUSE_MS: '20000' },
      });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        harness.once('exit', (code, signal) => resolve({ code, signal })),
      );
      await fileAppears(dir, 'paused', 20_000);
      const worker = Number(readFileSync(join(dir, 'paused'), 'utf8'));
      expect(alive(worker)).toBe(true);
      harness.kill('SIGINT');
      expect(await exited).toEqual({ code: 130, signal: null });
      // The worker was SIGKILLed by the harness on its way out; once reaped
      // (it has been re-parented) it is gone. A deadline, not a sleep.
      const deadline = Date.now() + 5000;
      while (alive(worker) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(alive(worker)).toBe(false);
    }, 30_000);
  }
});

/** Whether `pid` is a live process (a zombie counts as gone: it runs nothing). */
function alive(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return state.slice(state.lastIndexOf(')') + 2, state.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
