/**
 * The shape every real-server fixture returns, whichever provider started it. Tests and the
 * conformance suite only ever see these types, so a case written against a container runs
 * unchanged against a spawned binary.
 */

/** Which server a handle runs. */
export type ServerKind = 'redis' | 'memcached' | 'postgres' | 'zookeeper' | 'etcd';

/** How the server runs: a container through the Docker API (testcontainers) or a spawned binary. */
export type ServerProviderName = 'container' | 'process';

/** One running server and the faults a test may inject into it. */
export interface ServerHandle {
  readonly kind: ServerKind;
  readonly provider: ServerProviderName;
  /** The address to connect to (for containers the runtime's host, e.g. the bridge gateway). */
  readonly host: string;
  /** Fixed for the handle's whole life: restart() and up() bring the server back on it. */
  readonly port: number;
  /** redis://h:p, memcached://h:p, postgres://user:password@h:p/database, zookeeper://h:p, etcd://h:p */
  readonly url: string;
  /** Stops the server for good and removes its container or temp dir. Idempotent. */
  stop(): Promise<void>;
  /** down() then up(): the same host:port answers again when it resolves. */
  restart(): Promise<void>;
  /** Freezes the server (SIGSTOP of its process group, or a container pause): requests hang. */
  pause(): Promise<void>;
  /** Undoes pause(). */
  resume(): Promise<void>;
  /** Stops the server but keeps its port and data directory for up(): connections are refused. */
  down(): Promise<void>;
  /** Starts a server that is down again, on the same port, and waits until it answers. */
  up(): Promise<void>;
  /** `await using server = await startRedis()` stops it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** A PostgreSQL server also names the credentials that its url carries. */
export interface PostgresServerHandle extends ServerHandle {
  readonly kind: 'postgres';
  readonly user: string;
  readonly password: string;
  readonly database: string;
}

/** Options every starter accepts. */
export interface StartOptions {
  /** Overrides DEADBOLT_SERVERS / auto-detection for this server only. */
  readonly provider?: ServerProviderName;
  /** How long to wait for the server to answer its protocol after a start or up(). */
  readonly readyTimeoutMs?: number;
}

export interface RedisStartOptions extends StartOptions {
  /** Extra redis-server arguments, appended after the fixture's (`['--maxmemory', '10mb']`). */
  readonly args?: readonly string[];
}

export interface ZooKeeperStartOptions extends StartOptions {
  /** ZooKeeper's tickTime; session timeouts are bounded to [2, 20] ticks. Default 2000. */
  readonly tickTimeMs?: number;
}

/** A Redis primary with one replica that follows it (replication link up when returned). */
export interface RedisPrimaryReplica {
  readonly primary: ServerHandle;
  readonly replica: ServerHandle;
  /** REPLICAOF NO ONE on the replica: it becomes a writable primary (failover by hand). */
  promote(): Promise<void>;
  /** Stops both. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A Redis master watched by a Sentinel (the client asks the Sentinel where the master is). */
export interface RedisSentinelSet {
  readonly master: ServerHandle;
  /** The Sentinel process; its fault hooks act on the Sentinel, the master's on the master. */
  readonly sentinel: ServerHandle;
  readonly masterName: string;
  /** redis+sentinel://host:port?sentinel=<masterName> */
  readonly url: string;
  /** Stops both. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A ZooKeeper ensemble whose quorum has formed when it is returned. */
export interface ZooKeeperEnsemble {
  readonly members: readonly ServerHandle[];
  /** host1:port1,host2:port2,... as ZooKeeper clients take it. */
  readonly connectString: string;
  /** zookeeper://host1:port1,host2:port2,... */
  readonly url: string;
  /** The member whose `srvr` says `Mode: leader`, waiting (with a deadline) for an election. */
  leader(options?: { timeoutMs?: number }): Promise<ServerHandle>;
  /** Stops every member. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** An etcd cluster whose members all answer `/health` (a leader elected) when it is returned. */
export interface EtcdCluster {
  readonly members: readonly ServerHandle[];
  /** etcd://host1:port1,host2:port2,... */
  readonly url: string;
  /** Stops every member. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
