import { readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dockerEndpoint, dockerRequest } from './docker-api.js';
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
  const [containers, local] = await Promise.all([reapContainers(), Promise.resolve(reapProcesses())]);
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

function reapProcesses(): { processGroups: number; tempDirs: number } {
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
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  return { processGroups, tempDirs: dirs.length };
}
