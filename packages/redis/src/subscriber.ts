import { Cluster, type Redis } from 'ioredis';

/** A connection in subscriber mode can run nothing else: it is a second socket, ours to close. */
export function subscriberOf(connection: Redis | Cluster, clusterOptions: Record<string, unknown> = {}): Redis | Cluster {
  const subscriber = connection instanceof Cluster ? connection.duplicate(undefined, clusterOptions) : connection.duplicate();
  subscriber.on('error', () => undefined);
  return subscriber;
}
