import { pauseFirstHolder } from '../pause.js';
import { runWorkload, type RunSpec } from '../run.js';
import { forEachRow, requireCapability, row, servers, type Scenario } from '../scenario-kit.js';
import { targetCatalogue } from '../targets.js';

/** Every backend that may offer semaphores; a row without them is skipped, said why. */
const rows = [
  { ...targetCatalogue['zookeeper/ephemeral-sequential'], mode: 'semaphore' },
  { ...targetCatalogue['redis/setnx'], mode: 'semaphore' },
  { ...targetCatalogue['postgres/lease'], mode: 'semaphore' },
  { ...targetCatalogue['postgres/advisory'], mode: 'advisory semaphore' },
  { ...targetCatalogue['memcached/default'], mode: 'semaphore' },
] as const;

const permits = 2;

export const semaphorePause: Scenario = {
  name: 'semaphore-pause',
  description: `A counting semaphore of ${permits} permits under a pause: four clients; the first holder is frozen (SIGSTOP) for three ttls. Its permit runs out and is given to another client, so while it sleeps ${permits} others hold permits, and when it wakes it still believes it holds one: ${permits + 1} holders. The holders only read (several are inside at once by design, so no single fence can order their writes).`,
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  run: (opts) =>
    forEachRow('semaphore-pause', rows, opts, async (t) => {
      const server = await t.start(await servers());
      try {
        const url = t.url(server.url);
        await requireCapability(url, 'semaphore');
        const spec: RunSpec = {
          url,
          clients: 4,
          childClients: 1,
          durationMs: t.ttlMs * (opts.quick ? 5 : 7),
          ttlMs: t.ttlMs,
          permits,
          holdMs: 300,
          othersStartAfterFirstHold: true,
          perClient: () => ({ primitive: { kind: 'semaphore', permits } }),
        };
        const history = await runWorkload(spec, (ctx) =>
          pauseFirstHolder(ctx, `c0 paused (SIGSTOP) ${(t.ttlMs * 3) / 1000} s`, t.ttlMs * 3),
        );
        if ('sessionBound' in t && t.sessionBound) {
          return row(
            t.backend,
            t.mode,
            'semaphore-pause',
            history,
            `never more than ${permits} holders: a permit lives with the database session, which a paused holder keeps, so the others share the remaining permit`,
            (c) => c.overlaps === 0,
          );
        }
        return row(
          t.backend,
          t.mode,
          'semaphore-pause',
          history,
          `more than ${permits} holders at once while the paused holder's permit is given away (a permit is a lease, whatever the class)`,
          (c) => c.overlaps > 0,
        );
      } finally {
        await server.stop();
      }
    }),
};
