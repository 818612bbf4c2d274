import { pauseScenario } from '../pause-scenario.js';
import { targetCatalogue } from '../targets.js';

const permits = 2;

export const semaphorePause = pauseScenario({
  name: 'semaphore-pause',
  description: `A counting semaphore of ${permits} permits under a pause: four clients; the first holder is frozen (SIGSTOP) for three ttls. Its permit runs out and is given to another client, so while it sleeps ${permits} others hold permits, and when it wakes it still believes it holds one: ${permits + 1} holders. The holders only read (several are inside at once by design, so no single fence can order their writes).`,
  rows: [
    { ...targetCatalogue['zookeeper/ephemeral-sequential'], mode: 'semaphore' },
    { ...targetCatalogue['redis/fair'], mode: 'semaphore' },
    { ...targetCatalogue['postgres/lease'], mode: 'semaphore' },
    { ...targetCatalogue['postgres/advisory'], mode: 'advisory semaphore' },
    { ...targetCatalogue['memcached/default'], mode: 'semaphore' },
  ],
  capability: 'semaphore',
  clients: 4,
  permits,
  perClient: () => ({ primitive: { kind: 'semaphore', permits } }),
  paused: 'c0',
  predict: (t) =>
    t.sessionBound
      ? {
          expectation: `never more than ${permits} holders: a permit lives with the database session, which a paused holder keeps, so the others share the remaining permit`,
          ok: (c) => c.overlaps === 0,
        }
      : {
          expectation: `more than ${permits} holders at once while the paused holder's permit is given away (a permit is a lease, whatever the class)`,
          ok: (c) => c.overlaps > 0,
        },
});
