// Run by compare-workers.test.ts: runs one paused child worker from the built harness, writes the
// worker's pid to <dir>/paused once it is stopped, and what happened to <dir>/result.json. The test
// either makes the launching shell exit meanwhile (the harness's process group is then orphaned) or
// interrupts the harness. With 'with-server' a real server runs too, so the fixtures' own signal
// cleanup is installed beside the harness's.
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exitOnInterrupt } from '../dist/compare/interrupts.js';
import { runWorkload } from '../dist/compare/run.js';

// As the command line does.
exitOnInterrupt();

const dir = process.argv[2];
const server =
  process.argv[3] === 'with-server' ? await (await import('@deadbolt/conformance/servers')).startRedis({ provider: 'process' }) : undefined;
let result;
try {
  const history = await runWorkload(
    {
      url: 'memory://',
      clients: 1,
      childClients: 1,
      durationMs: 4000,
      ttlMs: 1000,
      holdMs: 200,
      othersStartAfterFirstHold: true,
      fencedStore: 'memory',
    },
    async (ctx) => {
      const child = ctx.children[0];
      child.kill('SIGSTOP');
      writeFileSync(join(dir, 'paused.tmp'), String(child.pid));
      renameSync(join(dir, 'paused.tmp'), join(dir, 'paused'));
      // Long enough for the shell to see the file and exit while the worker is stopped.
      await new Promise((r) => setTimeout(r, Number(process.env.PAUSE_MS ?? 1500)));
      child.kill('SIGCONT');
    },
  );
  result = { ok: true, intervals: history.intervals.length };
} catch (error) {
  result = { ok: false, error: String(error) };
}
// Written whole, then renamed: the test wakes on the name appearing.
await server?.stop();
writeFileSync(join(dir, 'result.tmp'), JSON.stringify(result));
renameSync(join(dir, 'result.tmp'), join(dir, 'result.json'));
