import { pauseFirstHolder } from '../pause.js';
import { runWorkload, type RunSpec } from '../run.js';
import { forEachRow, requireCapability, row, servers, type Scenario } from '../scenario-kit.js';
import { targetCatalogue } from '../targets.js';

/** Every backend that may offer read-write locks; a row without them is skipped, said why. */
const rows = [
  { ...targetCatalogue['zookeeper/ephemeral-sequential'], mode: 'read-write' },
  { ...targetCatalogue['redis/setnx'], mode: 'read-write' },
  { ...targetCatalogue['postgres/lease'], mode: 'read-write' },
  { ...targetCatalogue['postgres/advisory'], mode: 'advisory read-write' },
] as const;

export const rwlockPause: Scenario = {
  name: 'rwlock-pause',
  description:
    'A read-write lock under a pause: two writers and a reader; the first writer is frozen (SIGSTOP) inside its write hold for three ttls. Its hold runs out and the others get in (the reader too, which a writer must exclude); when the writer wakes it still believes it holds the write lock and writes. Readers only read.',
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  run: (opts) =>
    forEachRow('rwlock-pause', rows, opts, async (t) => {
      const server = await t.start(await servers());
      try {
        const url = t.url(server.url);
        await requireCapability(url, 'readWrite');
        const spec: RunSpec = {
          url,
          clients: 3,
          childClients: 1,
          durationMs: t.ttlMs * (opts.quick ? 5 : 7),
          ttlMs: t.ttlMs,
          holdMs: 300,
          othersStartAfterFirstHold: true,
          perClient: (i) => ({ primitive: { kind: i === 2 ? 'read' : 'write' } }),
        };
        const history = await runWorkload(spec, (ctx) =>
          pauseFirstHolder(ctx, `writer c0 paused (SIGSTOP) ${(t.ttlMs * 3) / 1000} s`, t.ttlMs * 3),
        );
        if ('sessionBound' in t && t.sessionBound) {
          return row(
            t.backend,
            t.mode,
            'rwlock-pause',
            history,
            '0 overlaps: the lock lives with the database session, which a paused writer keeps, so readers and writers wait until it wakes and releases it',
            (c) => c.overlaps === 0,
          );
        }
        return row(
          t.backend,
          t.mode,
          'rwlock-pause',
          history,
          'overlaps with the paused writer (a hold is a lease, whatever the class); 0 stale writes accepted by the fenced register',
          (c) => c.overlaps > 0 && c.staleWritesAcceptedFenced === 0,
        );
      } finally {
        await server.stop();
      }
    }),
};
