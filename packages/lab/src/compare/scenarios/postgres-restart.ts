import { fencedStoreFor } from '../data-servers.js';
import { runWorkload, type RunSpec } from '../run.js';
import { forEachRow, row, servers, sleep, type Scenario } from '../scenario-kit.js';

const rows = [
  { backend: 'postgres', mode: 'advisory', pkg: '@deadbolt/postgres' },
  { backend: 'postgres', mode: 'lease', pkg: '@deadbolt/postgres' },
] as const;

/** Restart PostgreSQL mid-run: advisory holders lose their sessions (and are told); lease rows survive. */
export const postgresRestart: Scenario = {
  name: 'postgres-restart',
  description:
    'The PostgreSQL server restarts mid-run (a crash and recovery, or a planned restart). Advisory locks live in the database session, so they vanish and their holders are told; lease rows are stored in a table and survive.',
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  async run(opts) {
    // Started on the first row that runs (none may: --only), shared by the others.
    let started: ReturnType<Awaited<ReturnType<typeof servers>>['startPostgres']> | undefined;
    try {
      return await forEachRow('postgres-restart', rows, opts, async ({ mode }) => {
        started ??= servers().then((s) => s.startPostgres());
        const server = await started;
        const spec: RunSpec = {
          url: `${server.url}?mode=${mode}`,
          clients: 3,
          childClients: 0,
          durationMs: opts.quick ? 5000 : 6000,
          ttlMs: 3000,
          holdMs: 300,
          // A data server of its own: the restart of the lock server does not touch the data.
          fencedStore: fencedStoreFor('postgres'),
        };
        const history = await runWorkload(spec, async (ctx) => {
          await sleep(1500);
          await ctx.fault('PostgreSQL restarted', () => server.restart());
        });
        return row(
          'postgres',
          mode,
          'postgres-restart',
          history,
          mode === 'advisory' ? 'holders told they lost the lock; 0 overlaps when they obey' : '0 overlaps',
          (c) => c.overlaps === 0,
        );
      });
    } finally {
      if (started) await (await started).stop();
    }
  },
};
