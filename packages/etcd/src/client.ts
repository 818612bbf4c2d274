import { noop } from 'cockatiel';
import { Etcd3, type IOptions } from 'etcd3';
import type { ResolvedEtcdOptions } from './options.js';

/**
 * The etcd3 client as the adapter uses it: one gRPC channel per member, no retries and no circuit
 * breaker of its own (a retried call would outlive its deadline, and a breaker kept refusing calls
 * for 5 s after a restarted member was back); every call carries a deadline instead, and the
 * adapter maps failures to typed errors.
 */
export function createEtcdClient(options: ResolvedEtcdOptions): Etcd3 {
  const scheme = options.tls ? 'https' : 'http';
  const config: IOptions = {
    hosts: options.hosts.map(({ host, port }) => `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`),
    dialTimeout: options.dialTimeoutMs,
    faultHandling: { host: () => noop, global: noop },
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
  return client;
}

/** The parts of etcd3's and grpc-js's private state that closeServicesAtOnce reaches into. */
interface GrpcService {
  close(): void;
  getChannel(): { internalChannel?: { subchannelPool?: { pool?: Record<string, { subchannel?: Subchannel }[]> } } };
}
interface Subchannel {
  continueConnecting?: boolean;
  startConnecting?: () => void;
}
interface PoolHost {
  cachedServices: Record<string, GrpcService | undefined>;
  resetAllServices(): void;
}

/**
 * Closing etcd3's gRPC clients so that no socket outlives them. Two private behaviours leaked
 * connections after close() when a member was down (7 established sockets to it once it was back):
 * - etcd3 resets a member's clients after each failed call, and closes one that is still connecting
 *   only once it is ready or a second has passed (a workaround for grpc-js 1.1);
 * - grpc-js 1.14 leaves a closed channel's subchannel in its reconnect backoff with
 *   `continueConnecting` set, so when the backoff ends it connects again, for nobody, and stays.
 * So: close at once, and stop the channel's own subchannels (a local subchannel pool, so that they
 * are this channel's alone) from ever connecting again. Only this client's hosts are changed.
 */
function closeServicesAtOnce(client: Etcd3): void {
  const hosts = (client as unknown as { pool?: { hosts?: PoolHost[] } }).pool?.hosts ?? [];
  for (const host of hosts) {
    host.resetAllServices = () => {
      const services = Object.values(host.cachedServices);
      host.cachedServices = Object.create(null) as PoolHost['cachedServices'];
      for (const service of services) {
        if (service === undefined) continue;
        // Taken before close(): closing drops the unused ones from the pool, still connecting.
        const pool = service.getChannel().internalChannel?.subchannelPool?.pool ?? {};
        const subchannels = Object.values(pool).flatMap((entries) => entries.map((entry) => entry.subchannel));
        service.close();
        for (const subchannel of subchannels) {
          if (subchannel === undefined) continue;
          // The load balancer may still ask it to connect on the next tick: nothing may now.
          subchannel.startConnecting = () => undefined;
          subchannel.continueConnecting = false;
        }
      }
    };
  }
}

/** gRPC call options for one unary call: its deadline (never past `deadline`, never past callTimeoutMs). */
export function callOptions(options: ResolvedEtcdOptions, deadline = Date.now() + options.callTimeoutMs): { deadline: number } {
  return { deadline: Math.min(deadline, Date.now() + options.callTimeoutMs) };
}
