import { noop } from 'cockatiel';
import { castGrpcError, Etcd3, GRPCCancelledError, type IOptions } from 'etcd3';
import { failoverPolicy } from './failover.js';
import type { ResolvedEtcdOptions } from './options.js';
import { OwnedConnects, type Connector } from './owned-connects.js';

/**
 * The etcd3 client as the adapter uses it: one gRPC channel per member and no circuit breaker (it
 * kept refusing calls for 5 s after a restarted member was back). etcd3's own retry sent a call
 * again whatever had happened to it, and for longer than its deadline; here only a call that never
 * reached a member moves on to the next one, within the call's deadline (failover.ts). Every call
 * carries a deadline, and the adapter maps failures to typed errors.
 */
export function createEtcdClient(options: ResolvedEtcdOptions): Etcd3 {
  const scheme = options.tls ? 'https' : 'http';
  const config: IOptions = {
    hosts: options.hosts.map(({ host, port }) => `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`),
    dialTimeout: options.dialTimeoutMs,
    faultHandling: { host: () => noop, global: failoverPolicy(options.hosts.length) },
    grpcOptions: {
      // A subchannel of the process-wide pool outlives the channel that closed it (grpc-js sweeps
      // that pool every 10 s): close() left sockets open. A pool of our own goes with the channel.
      'grpc.use_local_subchannel_pool': 1,
    },
    ...(options.username !== undefined && options.password !== undefined
      ? {
          auth: {
            username: options.username,
            password: options.password,
            callOptions: () => ({ deadline: Date.now() + options.callTimeoutMs }),
          },
        }
      : {}),
  };
  const client = new Etcd3(config);
  closeServicesAtOnce(client);
  ignoreOwnCancellations(client);
  closeAuthClients(client);
  return client;
}

/** The parts of etcd3's and grpc-js's private state that closeServicesAtOnce reaches into. */
interface Http2Session {
  readonly destroyed: boolean;
  destroy(): void;
}
interface Subchannel {
  continueConnecting?: boolean;
  startConnecting?: () => void;
  transport?: { session?: Http2Session | null } | null;
  /** Its connect in progress: the session waits there for the server's SETTINGS. */
  connector?: Connector & {
    session?: Http2Session | null;
    createSession?: (connected: { socket: { destroy(): void } }) => Promise<unknown>;
  };
}
interface SubchannelPool {
  pool?: Record<string, { subchannel?: Subchannel }[]>;
  getOrCreateSubchannel?: (...args: unknown[]) => Subchannel;
}
interface GrpcService {
  close(): void;
  getChannel(): { internalChannel?: { subchannelPool?: SubchannelPool } };
}
interface PoolHost {
  cachedServices: Record<string, GrpcService | undefined>;
  getServiceClient(name: string): GrpcService;
  resetAllServices(): void;
  close(): void;
}

/** How long a reset client's connection may take to close gracefully before it is destroyed. */
const closeGraceMs = 1_000;

/**
 * Closing etcd3's gRPC clients so that no socket outlives them. Three private behaviours leaked
 * connections after close():
 * - etcd3 resets a member's clients after each failed call, and closes one that is still connecting
 *   only once it is ready or a second has passed (a workaround for grpc-js 1.1);
 * - grpc-js 1.14 leaves a closed channel's subchannel in its reconnect backoff with
 *   `continueConnecting` set, so when the backoff ends it connects again, for nobody, and stays
 *   (a member down at close: 7 established sockets to it once it was back);
 * - a channel closes its HTTP/2 session gracefully, which a silent link (no bytes, no close) or a
 *   frozen member never lets finish, nor a connect still waiting for the member's SETTINGS: the
 *   socket stayed open until the kernel gave up on it;
 * - a TCP connect still under way at close (to a member whose SYNs go unanswered) is handed, once
 *   it completes, to a connector that keeps it as a session: the socket outlived close() for good
 *   once the member was back (seen on a cluster stopped and started again); and one to a member
 *   that never answers lasts until the kernel gives up (owned-connects.ts).
 * So: close at once, stop the channel's own subchannels (a local subchannel pool, so they are this
 * channel's alone) from connecting again, and destroy a session still open a second later, or at
 * once when the whole client closes. Only this client's hosts are changed.
 */
function closeServicesAtOnce(client: Etcd3): void {
  const hosts = (client as unknown as { pool?: { hosts?: PoolHost[] } }).pool?.hosts ?? [];
  const closing = new Set<Http2Session>();
  const destroy = (session: Http2Session): void => {
    closing.delete(session);
    // `closed` is set as soon as a graceful close begins; only `destroyed` says the socket is gone.
    if (!session.destroyed) session.destroy();
  };
  for (const host of hosts) {
    const connects = new OwnedConnects();
    const getServiceClient = host.getServiceClient.bind(host);
    host.getServiceClient = (name) => {
      const service = getServiceClient(name);
      adoptConnects(service, connects);
      return service;
    };
    const closeHost = host.close.bind(host);
    host.resetAllServices = () => {
      const services = Object.values(host.cachedServices);
      host.cachedServices = Object.create(null) as PoolHost['cachedServices'];
      for (const service of services) {
        if (service === undefined) continue;
        // Taken before close(): closing drops the unused ones from the pool, still connecting.
        const pool = service.getChannel().internalChannel?.subchannelPool?.pool ?? {};
        const subchannels = Object.values(pool).flatMap((entries) => entries.flatMap((entry) => entry.subchannel ?? []));
        const sessions = subchannels.flatMap((subchannel) =>
          [subchannel.transport?.session, subchannel.connector?.session].flatMap((each) => each ?? []),
        );
        service.close();
        for (const subchannel of subchannels) {
          // The load balancer may still ask it to connect on the next tick: nothing may now.
          subchannel.startConnecting = () => undefined;
          subchannel.continueConnecting = false;
          // A connect under way looks this up when its socket connects: that socket is nobody's now.
          if (subchannel.connector !== undefined) {
            subchannel.connector.createSession = (connected) => {
              connected.socket.destroy();
              return Promise.reject(new Error('the etcd client was closed while this connection was being made'));
            };
          }
        }
        for (const session of sessions) {
          closing.add(session);
          setTimeout(() => destroy(session), closeGraceMs).unref();
        }
      }
    };
    host.close = () => {
      closeHost();
      connects.close();
      for (const session of [...closing]) destroy(session);
    };
  }
}

/** Every subchannel this service's channel makes connects through `connects` (once per channel pool). */
function adoptConnects(service: GrpcService, connects: OwnedConnects): void {
  const pool = service.getChannel().internalChannel?.subchannelPool;
  const create = pool?.getOrCreateSubchannel;
  if (pool === undefined || create === undefined || adopted.has(pool)) return;
  adopted.add(pool);
  pool.getOrCreateSubchannel = (...args) => {
    const subchannel = create.apply(pool, args);
    if (subchannel.connector !== undefined && !adopted.has(subchannel)) {
      adopted.add(subchannel);
      connects.adopt(subchannel.connector);
    }
    return subchannel;
  };
}
const adopted = new WeakSet<object>();

/**
 * etcd3 takes any error of a stream for a failed member and resets every gRPC client of it, failing
 * the calls in flight there ("Channel closed before call started"). The watch stream's error when
 * our last watcher of it is cancelled is such an error: in a 3-member cluster it failed the campaign
 * that had just seen its predecessor go. A cancellation is ours, never the member's: ignore it.
 */
function ignoreOwnCancellations(client: Etcd3): void {
  const pool = (client as unknown as { pool?: { markFailed?: (resource: unknown, error: unknown) => void } }).pool;
  const markFailed = pool?.markFailed?.bind(pool);
  if (pool === undefined || markFailed === undefined) return;
  pool.markFailed = (resource, error) => {
    if (error instanceof GRPCCancelledError || (error as { code?: unknown } | undefined)?.code === grpcCancelled) return;
    markFailed(resource, error);
  };
}

interface AuthService {
  authenticate(
    request: { name: string; password: string },
    options: object,
    callback: (error: Error | null, response?: { token: string }) => void,
  ): void;
  close(): void;
}
type AuthServiceClass = new (address: string, credentials: unknown, options: object) => AuthService;

/**
 * etcd3 fetches an auth token with a gRPC client of its own that it never closes: its connection
 * outlived close() (one socket per client with `user:password@`). Same call, on a client that is
 * closed once the token is there. The constructor is the one etcd3 uses for its other Auth calls.
 */
function closeAuthClients(client: Etcd3): void {
  const pool = client as unknown as {
    pool?: {
      hosts?: { getServiceClient(name: string): object }[];
      authenticator?: { getCredentialsFromHost?: (...args: [string, string, string, object | undefined, unknown]) => Promise<string> };
    };
  };
  const authenticator = pool.pool?.authenticator;
  const host = pool.pool?.hosts?.[0];
  if (authenticator?.getCredentialsFromHost === undefined || host === undefined) return;
  authenticator.getCredentialsFromHost = (address, name, password, options, credentials) =>
    new Promise((resolve, reject) => {
      const Auth = host.getServiceClient('Auth').constructor as AuthServiceClass;
      const service = new Auth(address, credentials, { 'grpc.use_local_subchannel_pool': 1 });
      service.authenticate({ name, password }, options ?? {}, (error, response) => {
        service.close();
        if (error !== null || response === undefined) reject(castGrpcError(error ?? new Error('no token')));
        else resolve(response.token);
      });
    });
}

/** gRPC status CANCELLED. */
const grpcCancelled = 1;

/** gRPC call options for one unary call: its deadline (never past `deadline`, never past callTimeoutMs). */
export function callOptions(options: ResolvedEtcdOptions, deadline = Date.now() + options.callTimeoutMs): { deadline: number } {
  return { deadline: Math.min(deadline, Date.now() + options.callTimeoutMs) };
}
