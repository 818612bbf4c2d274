import { pauseScenario, sessionKeeps } from '../pause-scenario.js';
import { targets } from '../targets.js';

export const clientPause = pauseScenario({
  name: 'client-pause',
  description:
    "The first holder's process is frozen (SIGSTOP) inside its critical section for three ttls, then thawed: a long GC pause or a stalled VM. Its lease runs out meanwhile and another client takes the lock; when it wakes it still believes it holds the lock and writes.",
  rows: targets([
    'redis/setnx',
    'redis/fair',
    'redis/hash-reentrant',
    'memcached/default',
    'postgres/lease',
    'postgres/advisory',
    'zookeeper/ephemeral-sequential',
    'etcd/concurrency-mutex',
  ]),
  clients: 3,
  paused: 'c0',
  predict: (t) => {
    if (t.sessionBound) {
      return sessionKeeps(
        'the lock lives with the database session, which a paused client keeps, so nobody else gets the lock until the holder wakes and releases it',
      );
    }
    return t.fenced
      ? {
          expectation:
            'overlaps (the lease, or session, expires under a paused holder, whatever the class); 0 stale writes accepted by the fenced store, which refuses them',
          ok: (c) => c.overlaps > 0 && c.staleWritesAcceptedFenced === 0,
        }
      : {
          expectation: 'overlaps (the lease expires under a paused holder); no fencing tokens, so no store can refuse the stale write',
          ok: (c) => c.overlaps > 0,
        };
  },
});
