/**
 * `@deadbolt/cli`: the `deadbolt` command. The bin is the usual entry point; `main` runs the same
 * thing in-process (argv without node and the script) and resolves with the exit code.
 */
export { main, version } from './main.js';
export type { Io } from './output.js';
export { exitCodes, signalExitCode } from './exit-codes.js';
