/**
 * Worker children run in a session and process group of their own (fork with detached: setsid).
 * A SIGSTOPped process in the harness's own group would get SIGHUP (then SIGCONT) from the kernel
 * the moment that group became orphaned, e.g. when the shell that launched the harness exits
 * (POSIX "orphaned process group"; Linux kill_orphaned_pgrp only signals groups whose parent is in
 * the same session). In a session of their own they are out of reach of that rule, and of a
 * terminal's Ctrl-C, so the harness kills them itself: here, on exit and on the usual signals.
 */
const live = new Set<number>();
let installed = false;

export function trackWorker(pid: number): void {
  install();
  live.add(pid);
}

export function untrackWorker(pid: number): void {
  live.delete(pid);
}

function killAll(): void {
  for (const pid of live) {
    // SIGCONT after SIGKILL is harmless, and a stopped process dies at SIGKILL anyway.
    for (const signal of ['SIGKILL', 'SIGCONT'] as const) {
      try {
        process.kill(-pid, signal);
      } catch {
        /* already gone */
      }
    }
  }
  live.clear();
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    // First in line and gone after one use: the fixtures' exit cleanup (which re-raises the signal
    // when it is the last listener) then still ends the process, and so does a second Ctrl-C.
    const onSignal = (): void => {
      killAll();
      process.removeListener(signal, onSignal);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.prependListener(signal, onSignal);
  }
}
