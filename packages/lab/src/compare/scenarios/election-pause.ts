import { pauseScenario } from '../pause-scenario.js';
import { targetCatalogue } from '../targets.js';

/**
 * client-pause for leader election: the first leader is frozen inside its term, after its check
 * and before its write. Its term's lease runs out, another participant is elected, and when the
 * old leader wakes it still believes it leads and writes. Two leaders at once, on every backend (a
 * term is a lease); the term, used as a fencing token, is what lets the resource refuse the write.
 */
export const electionPause = pauseScenario({
  name: 'election-pause',
  description:
    'Leader election under a pause: the first leader is frozen (SIGSTOP) inside its term for three ttls, then thawed. Its term runs out and another participant is elected; when the old leader wakes it still believes it leads and writes. Only the term, used as a fencing token, lets the resource refuse that write.',
  rows: [
    { ...targetCatalogue['zookeeper/ephemeral-sequential'], mode: 'election' },
    { ...targetCatalogue['redis/setnx'], mode: 'election' },
    { ...targetCatalogue['postgres/lease'], mode: 'election' },
    // The term's session runs with idle_session_timeout = ttl: the server ends a paused leader's session.
    { ...targetCatalogue['postgres/advisory'], mode: 'advisory election' },
  ],
  capability: 'election',
  clients: 3,
  perClient: () => ({ primitive: { kind: 'election' } }),
  paused: 'leader c0',
  predict: () => ({
    expectation:
      'two leaders at once (a term is a lease, whatever the class); 0 stale writes accepted by the fenced store, which refuses them (the term is the fence)',
    ok: (c) => c.overlaps > 0 && c.staleWritesAcceptedFenced === 0,
  }),
});
