import { pauseScenario } from '../pause-scenario.js';
import { targets } from '../targets.js';

/**
 * client-pause with lock-delay (`lockDelayMs`): the rows of the backends that enforce it. The pause
 * is three ttls, as in client-pause. A delay of four ttls outlasts it (ttl + delay > pause): the
 * next holder waits out the stalled one and nobody overlaps, at the price of the key standing idle
 * after the lease. A delay of one ttl does not (ttl + delay < pause): the overlap is back. Fencing
 * is the answer that needs no guess of the longest stall.
 */
const rows = targets(['redis/setnx', 'redis/hash-reentrant', 'memcached/default', 'postgres/lease']);

export const clientPauseLockDelay = pauseScenario({
  name: 'client-pause-lock-delay',
  description:
    'client-pause with lockDelayMs = 4 ttls: the first holder is frozen (SIGSTOP) inside its critical section for three ttls. Its lease runs out, but the server keeps the key from the others for the delay after it, longer than the stall: the holder wakes, writes and releases before anyone else gets in. What it costs: after a real crash the key would stand idle for ttl + delay.',
  rows,
  clients: 3,
  paused: 'c0',
  lockDelayTtls: 4,
  predict: () => ({
    expectation:
      '0 overlaps: the delay (4 ttls) outlasts the stall (3 ttls), so the next holder starts after the stalled one woke and released',
    ok: (c) => c.overlaps === 0,
  }),
});

export const clientPauseShortLockDelay = pauseScenario({
  name: 'client-pause-short-lock-delay',
  description:
    'client-pause with lockDelayMs = 1 ttl: the stall (three ttls) outlasts ttl + delay, so the key is granted again while the first holder is still frozen, and it writes when it wakes. Lock-delay narrows the window; only fencing closes it.',
  rows,
  clients: 3,
  paused: 'c0',
  lockDelayTtls: 1,
  predict: () => ({
    expectation: 'overlaps: the stall (3 ttls) is longer than ttl + delay (2 ttls)',
    ok: (c) => c.overlaps > 0,
  }),
});
