import { pauseScenario, sessionKeeps } from '../pause-scenario.js';
import { targetCatalogue } from '../targets.js';

export const rwlockPause = pauseScenario({
  name: 'rwlock-pause',
  description:
    'A read-write lock under a pause: two writers and a reader; the first writer is frozen (SIGSTOP) inside its write hold for three ttls. Its hold runs out and the others get in (the reader too, which a writer must exclude); when the writer wakes it still believes it holds the write lock and writes. Readers only read.',
  rows: [
    { ...targetCatalogue['zookeeper/ephemeral-sequential'], mode: 'read-write' },
    { ...targetCatalogue['redis/fair'], mode: 'read-write' },
    { ...targetCatalogue['postgres/lease'], mode: 'read-write' },
    { ...targetCatalogue['postgres/advisory'], mode: 'advisory read-write' },
  ],
  capability: 'readWrite',
  clients: 3,
  perClient: (i) => ({ primitive: { kind: i === 2 ? 'read' : 'write' } }),
  paused: 'writer c0',
  predict: (t) =>
    t.sessionBound
      ? sessionKeeps(
          'the lock lives with the database session, which a paused writer keeps, so readers and writers wait until it wakes and releases it',
        )
      : {
          expectation:
            'overlaps with the paused writer (a hold is a lease, whatever the class); 0 stale writes accepted by the fenced store, which refuses them',
          ok: (c) => c.overlaps > 0 && c.staleWritesAcceptedFenced === 0,
        },
});
