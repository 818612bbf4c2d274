/** The registry of nemesis scenarios `npm run compare` knows, in the order it runs them. */
import type { Scenario } from './scenario-kit.js';
import { clientPause } from './scenarios/client-pause.js';
import { clientPauseLockDelay, clientPauseShortLockDelay } from './scenarios/client-pause-lock-delay.js';
import { electionPause } from './scenarios/election-pause.js';
import { etcdLeaderLoss } from './scenarios/etcd-leader-loss.js';
import { getsetClockSkew } from './scenarios/getset-clock-skew.js';
import { partition } from './scenarios/partition.js';
import { postgresRestart } from './scenarios/postgres-restart.js';
import { redisFailover } from './scenarios/redis-failover.js';
import { redlockRestart } from './scenarios/redlock-restart.js';
import { rwlockPause } from './scenarios/rwlock-pause.js';
import { semaphorePause } from './scenarios/semaphore-pause.js';
import { zookeeperLeaderLoss } from './scenarios/zookeeper-leader-loss.js';

export { requireAdapter, SkipError, type ConsistencyClass, type RunOptions, type Scenario, type ScenarioResult } from './scenario-kit.js';

export const scenarios: readonly Scenario[] = [
  clientPause,
  zookeeperLeaderLoss,
  etcdLeaderLoss,
  getsetClockSkew,
  postgresRestart,
  partition,
  redisFailover,
  redlockRestart,
  electionPause,
  rwlockPause,
  semaphorePause,
  clientPauseLockDelay,
  clientPauseShortLockDelay,
];

/**
 * `--quick`: the same faults on one backend of each class, so the page shows the real contrast
 * (under a pause every lease overlaps, CP or AP, and only fencing keeps the stale write out; under
 * a partition a correct client is told in time on every backend). Comparing different faults on
 * different backends would teach "CP never overlaps", which is wrong.
 */
export const quickPlan = {
  scenarios: ['client-pause', 'partition'],
  rows: ['redis/setnx', 'postgres/lease', 'zookeeper/ephemeral-sequential'],
} as const;
