// Run by compare-workers.test.ts as a background job of a job-control shell that exits while the
// worker is paused (its process group is then orphaned): runs one paused child worker from the
// built harness and writes what happened to <dir>/result.json.
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runWorkload } from '../dist/compare/run.js';

const dir = process.argv[2];
let result;
try {
  const history = await runWorkload(
    { url: 'memory://', clients: 1, childClients: 1, durationMs: 4000, ttlMs: 1000, holdMs: 200, othersStartAfterFirstHold: true },
    async (ctx) => {
      const child = ctx.children[0];
      child.kill('SIGSTOP');
      writeFileSync(join(dir, 'paused'), '');
      // Long enough for the shell to see the file and exit while the worker is stopped.
      await new Promise((r) => setTimeout(r, 1500));
      child.kill('SIGCONT');
    },
  );
  result = { ok: true, intervals: history.intervals.length };
} catch (error) {
  result = { ok: false, error: String(error) };
}
// Written whole, then renamed: the test wakes on the name appearing.
writeFileSync(join(dir, 'result.tmp'), JSON.stringify(result));
renameSync(join(dir, 'result.tmp'), join(dir, 'result.json'));
