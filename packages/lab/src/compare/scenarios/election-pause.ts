import { pauseFirstHolder } from '../pause.js';
import type { RunSpec } from '../run.js';
import { runWorkload } from '../run.js';
import { forEachRow, requireCapability, row, servers, type Scenario } from '../scenario-kit.js';
import { targetCatalogue } from '../targets.js';

/** The lock targets whose backends may offer elections; a row without them is skipped, said why. */
const rows = [
  { ...targetCatalogue['zookeeper/ephemeral-sequential'], mode: 'election' },
  { ...targetCatalogue['redis/setnx'], mode: 'election' },
  { ...targetCatalogue['postgres/lease'], mode: 'election' },
  // The term's session runs with idle_session_timeout = ttl: the server ends a paused leader's session.
  { ...targetCatalogue['postgres/advisory'], mode: 'advisory election' },
] as const;

/**
 * client-pause for leader election: the first leader's process is frozen (SIGSTOP) inside its term,
 * after its check and before its write, for three ttls (sessions, on ZooKeeper). Its term's lease
 * runs out, another participant is elected, and when the old leader wakes it still believes it
 * leads and writes. Two leaders at once, on every backend (a term is a lease); the term, used as a
 * fencing token, is what lets the resource refuse the old leader's write.
 */
export const electionPause: Scenario = {
  name: 'election-pause',
  description:
    'Leader election under a pause: the first leader is frozen (SIGSTOP) inside its term for three ttls, then thawed. Its term runs out and another participant is elected; when the old leader wakes it still believes it leads and writes. Only the term, used as a fencing token, lets the resource refuse that write.',
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  run: (opts) =>
    forEachRow('election-pause', rows, opts, async (t) => {
      const server = await t.start(await servers());
      try {
        const url = t.url(server.url);
        await requireCapability(url, 'election');
        const spec: RunSpec = {
          url,
          clients: 3,
          childClients: 1,
          durationMs: t.ttlMs * (opts.quick ? 5 : 7),
          ttlMs: t.ttlMs,
          holdMs: 300,
          othersStartAfterFirstHold: true,
          perClient: () => ({ primitive: { kind: 'election' } }),
        };
        const history = await runWorkload(spec, (ctx) =>
          pauseFirstHolder(ctx, `leader c0 paused (SIGSTOP) ${(t.ttlMs * 3) / 1000} s`, t.ttlMs * 3),
        );
        return row(
          t.backend,
          t.mode,
          'election-pause',
          history,
          'two leaders at once (a term is a lease, whatever the class); 0 stale writes accepted by the fenced register (the term is the fence)',
          (c) => c.overlaps > 0 && c.staleWritesAcceptedFenced === 0,
        );
      } finally {
        await server.stop();
      }
    }),
};
