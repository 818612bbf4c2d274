import { constants } from 'node:os';

/**
 * Ctrl-C (and SIGTERM, SIGHUP) must end the harness. Node exits on them only while nobody
 * listens, and several libraries listen without ever exiting: the server fixtures' cleanup and
 * signal-exit (loaded with testcontainers) each re-raise the signal only when they are the last
 * listener, so together neither does. The command line therefore exits itself, once every listener
 * has run (setImmediate), with the shell's 128 + signal number; 'exit' handlers then kill the
 * workers and the servers.
 */
export function exitOnInterrupt(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      setImmediate(() => process.exit(128 + constants.signals[signal]));
    });
  }
}
