import { readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { dockerEndpoint, dockerRequest } from './docker-api.js';
import { processState } from './process-tree.js';
import { tempDirPrefix } from './temp-dir.js';

/** What reapOrphans removed. */
export interface ReapReport {
  readonly containers: number;
  readonly processGroups: number;
  readonly tempDirs: number;
}

/**
 * Removes what a test process that died without cleaning up (SIGKILL, a crashed worker) left:
 * containers labelled `deadbolt.owner-pid` and temp dirs whose owner.json names a process that
 * no longer exists, with any server process still running from such a dir (found through /proc).
 * Live owners are never touched, so parallel runs are safe.
 */
export async function reapOrphans(): Promise<ReapReport> {
  const [containers, local] = await Promise.all([reapContainers(), reapProcesses()]);
  return { containers, ...local };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function reapContainers(): Promise<number> {
  const endpoint = dockerEndpoint();
  if (endpoint === undefined) return 0;
  let listed: { Id: string; Labels?: Record<string, string> }[];
  try {
    const filters = encodeURIComponent(JSON.stringify({ label: ['deadbolt.owner-pid'] }));
    listed = JSON.parse(await dockerRequest(endpoint, 'GET', `/containers/json?all=1&filters=${filters}`, 5_000)) as typeof listed;
  } catch {
    return 0;
  }
  const orphans = listed.filter((container) => !alive(Number(container.Labels?.['deadbolt.owner-pid'] ?? 0)));
  await Promise.all(
    orphans.map((container) => dockerRequest(endpoint, 'DELETE', `/containers/${container.Id}?force=1&v=1`, 20_000).catch(() => undefined)),
  );
  return orphans.length;
}

async function reapProcesses(): Promise<{ processGroups: number; tempDirs: number }> {
  const root = tmpdir();
  const dirs = readdirSync(root)
    .filter((name) => name.startsWith(tempDirPrefix))
    .map((name) => join(root, name))
    .filter((dir) => {
      try {
        const { ownerPid } = JSON.parse(readFileSync(join(dir, 'owner.json'), 'utf8')) as { ownerPid?: number };
        return typeof ownerPid === 'number' && !alive(ownerPid);
      } catch {
        return false;
      }
    });
  let processGroups = 0;
  const killed: number[] = [];
  if (dirs.length > 0) {
    // A server belongs to an orphaned dir when it runs in it (fixtures spawn with cwd = the dir)
    // or its command line names it.
    for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
      let where: string;
      try {
        where = `${readlinkSync(join('/proc', entry, 'cwd'))}\n${readFileSync(join('/proc', entry, 'cmdline'), 'utf8')}`;
      } catch {
        continue;
      }
      if (!dirs.some((dir) => where.includes(dir))) continue;
      killed.push(Number(entry));
      try {
        process.kill(-Number(entry), 'SIGKILL');
        processGroups += 1;
      } catch {
        try {
          process.kill(Number(entry), 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
  }
  await exitedOrGiveUp(killed, REAP_WAIT_MS);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  return { processGroups, tempDirs: dirs.length };
}

/** How long reapOrphans waits for the servers it killed to be gone. */
const REAP_WAIT_MS = 10_000;

/**
 * SIGKILL only marks a process: until the kernel has run its exit, its listening socket still
 * accepts connections (the kernel completes the handshake), so a caller that checks the port right
 * after reapOrphans could find the server "still up" on a loaded machine. Waits until each is gone
 * or a zombie (on Linux a zombie holds no sockets; its new parent reaps it), or the bound passes.
 * gVisor (this project's CI sandbox) closed a zombie's listening socket up to ~100 ms later still.
 */
async function exitedOrGiveUp(pids: readonly number[], boundMs: number): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (pids.some(running) && Date.now() < deadline) await delay(10);
}

function running(pid: number): boolean {
  const state = processState(pid);
  return state !== undefined && state !== 'Z';
}
