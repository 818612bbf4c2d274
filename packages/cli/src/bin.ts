#!/usr/bin/env node
import { main } from './main.js';

const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
// Exit at once: a slow socket close in a driver must not keep a finished command waiting.
process.exit(code);
