import type { ServerHandle } from '@deadbolt/conformance/servers';
import { Cluster, Redis } from 'ioredis';

/**
 * The conformance suite's residue hook for Redis: how many keys of the case's prefix are left on
 * the server (holders, queues, waiter deadlines, stored permits: what a give-up or a crash could
 * strand). Fencing counters are left out: they outlive every hold by design, so fences never go back.
 * On Cluster every master is scanned.
 */
export async function redisResidue(server: ServerHandle | undefined, keyPrefix: string): Promise<number> {
  if (server === undefined) throw new Error('the residue hook needs the suite server');
  const cluster = server.url.includes('cluster=true');
  const connection = cluster
    ? new Cluster([{ host: server.host, port: server.port }], { redisOptions: { maxRetriesPerRequest: 1 } })
    : new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 });
  connection.on('error', () => undefined);
  try {
    const nodes = connection instanceof Cluster ? (await connection.info(), connection.nodes('master')) : [connection];
    let left = 0;
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `*${keyPrefix}*`, 'COUNT', 1_000);
        cursor = next;
        left += keys.filter((key) => !key.endsWith(':fence')).length;
      } while (cursor !== '0');
    }
    return left;
  } finally {
    connection.disconnect();
  }
}
