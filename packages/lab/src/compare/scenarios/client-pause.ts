import { pauseFirstHolder } from '../pause.js';
import type { RunSpec } from '../run.js';
import { runWorkload } from '../run.js';
import { forEachRow, row, servers, type Scenario } from '../scenario-kit.js';
import { targets, type Target, type TargetName } from '../targets.js';

// The pause (pause.ts) is called as c0 enters its first hold (othersStartAfterFirstHold; it works
// for holdMs before writing), so it always lands inside that hold and the run is the same every time.

const rows: TargetName[] = [
  'redis/setnx',
  'redis/fair',
  'redis/hash-reentrant',
  'memcached/default',
  'postgres/lease',
  'postgres/advisory',
  'zookeeper/ephemeral-sequential',
];

async function runTarget(t: Target, quick: boolean): Promise<ReturnType<typeof row>> {
  const server = await t.start(await servers());
  try {
    const spec: RunSpec = {
      url: t.url(server.url),
      clients: 3,
      childClients: 1,
      durationMs: t.ttlMs * (quick ? 5 : 7),
      ttlMs: t.ttlMs,
      holdMs: 300,
      othersStartAfterFirstHold: true,
    };
    const history = await runWorkload(spec, (ctx) => pauseFirstHolder(ctx, `c0 paused (SIGSTOP) ${(t.ttlMs * 3) / 1000} s`, t.ttlMs * 3));
    if (t.sessionBound) {
      return row(
        t.backend,
        t.mode,
        'client-pause',
        history,
        '0 overlaps: the lock lives with the database session, which a paused client keeps, so nobody else gets the lock until the holder wakes and releases it',
        (c) => c.overlaps === 0,
      );
    }
    return t.fenced
      ? row(
          t.backend,
          t.mode,
          'client-pause',
          history,
          'overlaps (the lease, or session, expires under a paused holder, whatever the class); 0 stale writes accepted by the fenced register',
          (c) => c.overlaps > 0 && c.staleWritesAcceptedFenced === 0,
        )
      : row(
          t.backend,
          t.mode,
          'client-pause',
          history,
          'overlaps (the lease expires under a paused holder); no fencing tokens, so no register can refuse the stale write',
          (c) => c.overlaps > 0,
        );
  } finally {
    await server.stop();
  }
}

export const clientPause: Scenario = {
  name: 'client-pause',
  description:
    "The first holder's process is frozen (SIGSTOP) inside its critical section for three ttls, then thawed: a long GC pause or a stalled VM. Its lease runs out meanwhile and another client takes the lock; when it wakes it still believes it holds the lock and writes.",
  rows,
  run: (opts) => forEachRow('client-pause', targets(rows), opts, (t) => runTarget(t, opts.quick)),
};
