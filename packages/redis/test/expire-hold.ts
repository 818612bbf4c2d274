import { Redis } from 'ioredis';

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
