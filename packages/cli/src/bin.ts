#!/usr/bin/env node
import { exitCodes } from './exit-codes.js';
import { main } from './main.js';

// A reader that goes away (`deadbolt leader x --watch | head -1`) is the end of the output, not a crash.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(exitCodes.ok);
  throw error;
});

const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
// Exit at once: a slow socket close in a driver must not keep a finished command waiting.
process.exit(code);
