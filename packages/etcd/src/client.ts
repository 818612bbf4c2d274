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
  return new Etcd3(config);
}

/** gRPC call options for one unary call: its deadline. */
export function callOptions(options: ResolvedEtcdOptions, deadline = Date.now() + options.callTimeoutMs): { deadline: number } {
  return { deadline: Math.min(deadline, Date.now() + options.callTimeoutMs) };
}
