import type { Capabilities } from '@deadbolt/core/adapter';
import { Cluster, type Redis } from 'ioredis';
import { openCommandConnection, openMasters, type OwnedConnection } from '../connections.js';
import { campaignSetnx, leaderSetnx } from '../election.js';
import { tryAcquireManySetnx } from '../multi.js';
import type { RedisMode, ResolvedRedisOptions } from '../options.js';
import { releaseWaitOn } from '../release-wait.js';
import { subscriberOf } from '../subscriber.js';
import { FairMode, fairCapabilities, type FairSettings } from './fair.js';
import { FairKinds } from './fair-kinds.js';
import { GetsetMode, getsetCapabilities } from './getset.js';
import { HashReentrantMode, hashReentrantCapabilities } from './hash-reentrant.js';
import { plainRoom, type ModeContext, type ModeRoom } from './mode.js';
import { RedlockMode, redlockCapabilities } from './redlock.js';
import { SetnxMode, setnxCapabilities } from './setnx.js';

/** One row of the mode table: everything the backend knows of a mode. */
export interface RedisModeEntry {
  /** The mode's capabilities (a mode may narrow them for its options: setnx with replicas). */
  readonly capabilities: Capabilities;
  /** How it locks, in one line. */
  readonly summary: string;
  /** The command connections it runs on: one (a server, a Sentinel master, a Cluster), or RedLock's masters. */
  readonly connect: (options: ResolvedRedisOptions) => readonly OwnedConnection[];
  /** Round trips one call may need (RedLock: an attempt and its undo), for the call's deadline. */
  readonly roundsPerCall: number;
  /** RedLock keeps a deadline of its own on every call; the others lean on ioredis' commandTimeout. */
  readonly ownDeadline: boolean;
  readonly create: (context: ModeContext) => ModeRoom;
}

const oneConnection = (options: ResolvedRedisOptions): readonly OwnedConnection[] => [openCommandConnection(options)];

/**
 * The Redis modes. Adding a mode is one entry here (and its file under modes/): the backend's
 * connections, deadline, name, capabilities and construction all read this.
 */
export const redisModeTable = Object.freeze({
  setnx: {
    capabilities: setnxCapabilities,
    summary: 'SET NX PX with a fencing counter; release by compare-and-delete, waiters woken by a release message',
    connect: oneConnection,
    roundsPerCall: 1,
    ownDeadline: false,
    create: setnxRoom,
  },
  fair: {
    capabilities: fairCapabilities,
    summary: 'a FIFO queue beside the lock; the server grants the head waiter in place and tells its client',
    connect: oneConnection,
    roundsPerCall: 1,
    ownDeadline: false,
    create: fairRoom,
  },
  getset: {
    capabilities: getsetCapabilities,
    summary: 'SETNX and GETSET with the expiry on the clients’ clocks, for servers without SET NX PX',
    connect: oneConnection,
    roundsPerCall: 1,
    ownDeadline: false,
    create: ({ connections, options }) => plainRoom(new GetsetMode(connections[0]!, options.now)),
  },
  'hash-reentrant': {
    capabilities: hashReentrantCapabilities,
    summary: 'a hash of hold counts per owner (Redisson’s reentrant lock); waiters woken by a release message',
    connect: oneConnection,
    roundsPerCall: 1,
    ownDeadline: false,
    create: ({ connections, options, deadlineMs }) => {
      const wait = releaseWaitOn(connections[0]!, deadlineMs);
      return plainRoom(new HashReentrantMode(connections[0]!, options.replicaWait), { waitForChange: wait.waitForChange }, () => [
        wait.close(),
      ]);
    },
  },
  redlock: {
    capabilities: redlockCapabilities,
    summary: 'RedLock: the same token on a majority of independent masters within the validity time',
    connect: openMasters,
    roundsPerCall: 2,
    ownDeadline: true,
    // openMasters opens (or is given) plain connections, one per master.
    create: ({ connections, options }) => plainRoom(new RedlockMode(connections as readonly Redis[], options)),
  },
} as const satisfies Record<RedisMode, RedisModeEntry>);

export function modeEntry(mode: RedisMode): RedisModeEntry {
  return redisModeTable[mode];
}

/** setnx: release messages for waiters; one script per slot for multi-locks; elections on the lock. */
function setnxRoom({ connections, options, deadlineMs }: ModeContext): ModeRoom {
  const connection = connections[0]!;
  const wait = releaseWaitOn(connection, deadlineMs);
  const acked = options.replicaWait;
  const mutex = new SetnxMode(connection, acked);
  return plainRoom(
    mutex,
    {
      waitForChange: wait.waitForChange,
      // With replicas, acquireAll takes key after key (each grant acknowledged) instead of one script.
      ...(acked === undefined ? { multi: { tryAcquireMany: (requests) => tryAcquireManySetnx(connection, requests) } } : {}),
      // A term is the lock itself: the mutex renews and releases it.
      election: {
        campaign: (request, deadline, signal) => campaignSetnx(connection, wait.waitForChange, request, deadline, signal, acked),
        leader: (key) => leaderSetnx(connection, key),
        keeper: mutex,
      },
    },
    () => [wait.close()],
  );
}

/** fair: the mutex's queue, and beside it the kinds (read-write locks, semaphores), multi-locks and elections. */
function fairRoom({ connections, options, name }: ModeContext): ModeRoom {
  const connection = connections[0]!;
  const settings: FairSettings = {
    backend: name,
    waiterLeaseMs: options.waiterLeaseMs,
    cluster: connection instanceof Cluster,
    // On Cluster, shard channels need ioredis' sharded subscribers (one per master).
    openSubscriber: () => subscriberOf(connection, { shardedSubscribers: true }),
  };
  const mutex = new FairMode(connection, settings);
  const kinds = new FairKinds(connection, settings, name);
  const subscribers = (): (Redis | Cluster)[] => [mutex.subscriber(), kinds.subscriber()].filter((subscriber) => subscriber !== undefined);
  return {
    mutex,
    kinds,
    acquire: (request, deadline, signal) => mutex.acquire(request, deadline, signal),
    // Multi-lock keys and terms are fair mutex locks, queued and kept by the mutex.
    multi: { acquireMany: (requests, deadline, signal) => mutex.acquireMany(requests, deadline, signal) },
    election: {
      campaign: (request, deadline, signal) => mutex.campaign(request, deadline, signal),
      leader: (key) => mutex.leader(key),
      keeper: mutex,
    },
    crash: () => {
      mutex.crash();
      kinds.crash();
    },
    close: async () => {
      await Promise.all([mutex.close(), kinds.close()]);
    },
    subscribers,
    dropGrantMessages: () => {
      for (const subscriber of subscribers()) {
        // A half-closed socket still delivers what is in flight: stop listening first.
        subscriber.removeAllListeners('message');
        subscriber.removeAllListeners('smessage');
        subscriber.disconnect();
      }
    },
  };
}
