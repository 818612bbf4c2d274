/**
 * Real-server fixtures: `import { startRedis } from '@deadbolt/conformance/servers'`.
 * Each starter runs the server in a container (testcontainers) or as a spawned binary,
 * per DEADBOLT_SERVERS=container|process|auto, and returns a ServerHandle with fault hooks.
 */
export type {
  EtcdCluster,
  PostgresServerHandle,
  RedisPrimaryReplica,
  RedisSentinelSet,
  RedisStartOptions,
  ServerHandle,
  ServerKind,
  ServerProviderName,
  StartOptions,
  ZooKeeperEnsemble,
  ZooKeeperStartOptions,
} from './types.js';
export { startRedis, startRedisMasters, startRedisPrimaryReplica } from './redis.js';
export { startRedisSentinel } from './redis-sentinel.js';
export { startMemcached } from './memcached.js';
export { startPostgres } from './postgres.js';
export { startZooKeeper, startZooKeeperEnsemble } from './zookeeper.js';
export { startEtcd, startEtcdCluster } from './etcd.js';
export { chooseServerProvider, decideServerProvider, serverProvider, type ProviderDecision } from './provider.js';
export { prepareServers } from './setup.js';
export { findServerBinaries, missingPackages, type ServerBinaries } from './binaries.js';
export { reapOrphans, type ReapReport } from './orphans.js';
export {
  exchange,
  probeEtcd,
  probeMemcached,
  probePostgres,
  probeRedis,
  probeZooKeeper,
  redisCommand,
  zooKeeperMode,
  zooKeeperSrvr,
} from './probes.js';
export { freePort } from './ports.js';
export { startProxy, type TcpProxy } from './tcp-proxy.js';
export {
  etcdRequestCount,
  memcachedCommandCount,
  postgresStatementCount,
  redisCommandCount,
  redisKillClients,
  zooKeeperPacketsReceived,
} from './counters.js';
