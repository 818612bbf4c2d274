import { readdirSync, readFileSync } from 'node:fs';

/**
 * Every live descendant of `pid` (children, their children, ...), read from /proc. Needed to freeze
 * a whole server: PostgreSQL's backends and auxiliary processes each call setsid() at fork
 * (InitPostmasterChild), so a signal to the postmaster's process group reaches none of them.
 * Returns [] where /proc is not there (the fixtures run on Linux).
 */
export function descendantPids(pid: number): number[] {
  const childrenOf = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const parent = parentPid(Number(entry));
    if (parent === undefined) continue;
    const siblings = childrenOf.get(parent);
    if (siblings === undefined) childrenOf.set(parent, [Number(entry)]);
    else siblings.push(Number(entry));
  }
  const found: number[] = [];
  const queue = [pid];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const child of childrenOf.get(next) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** The ppid field of /proc/<pid>/stat (after the parenthesised command, which may hold spaces). */
function parentPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[1]);
  } catch {
    return undefined; // exited meanwhile
  }
}

/** The state letter of /proc/<pid>/stat, or of one of its threads ('R', 'S', 'T' stopped, 'Z' zombie...); undefined once gone. */
export function processState(pid: number, thread?: number): string | undefined {
  try {
    const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
    // The state follows the command name, which is in parentheses and may itself hold spaces.
    return stat.charAt(stat.lastIndexOf(')') + 2);
  } catch {
    return undefined;
  }
}

/**
 * Whether every thread of `pid` has stopped (or ended). SIGSTOP returns at once, and each thread of
 * the target stops only when the kernel next interrupts it: until then a server thread on the other
 * core can still answer a request that was already in its socket (memcached did, in a CI run: an
 * acquire "against a frozen server" succeeded 11 ms after the freeze).
 */
export function fullyStopped(pid: number): boolean {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return true; // gone
  }
  return threads.every((thread) => {
    const state = processState(pid, Number(thread));
    return state === undefined || state === 'T' || state === 't' || state === 'Z' || state === 'X';
  });
}
