import { Cluster, Redis } from 'ioredis';

/**
 * The conformance suite's expireHold hook: the lock key goes (DEL) on every given server, as an
 * early expiry or a failover to a replica that never saw it would take it, behind the holder's back.
 */
export function deleteKeyOn(addresses: () => readonly { readonly host: string; readonly port: number }[]) {
  return async (fullKey: string): Promise<void> => {
    await Promise.all(
      addresses().map(async ({ host, port }) => {
        const redis = new Redis({ host, port, maxRetriesPerRequest: 1 });
        redis.on('error', () => undefined);
        try {
          await redis.del(fullKey);
        } finally {
          redis.disconnect();
        }
      }),
    );
  };
}

/** The same on a Redis Cluster, through its seed node: the key goes on the master that serves its slot. */
export async function deleteKeyInCluster(seed: { readonly host: string; readonly port: number }, fullKey: string): Promise<void> {
  const cluster = new Cluster([{ host: seed.host, port: seed.port }], { redisOptions: { maxRetriesPerRequest: 1 } });
  cluster.on('error', () => undefined);
  try {
    await cluster.del(fullKey);
  } finally {
    cluster.disconnect();
  }
}
