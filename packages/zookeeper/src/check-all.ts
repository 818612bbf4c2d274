import type { Client } from 'node-zookeeper-client';
import { errorCode, Exception, request } from './operations.js';

/** One multi request stays far below jute.maxbuffer (1 MB) even with long lock paths. */
const opsPerMulti = 500;

interface MultiResult {
  readonly err?: number;
}

/**
 * Whether each node still exists, in one multi (a transaction of `check` ops) per 500 paths instead
 * of one `exists` per path: renewing 10,000 session-leased locks costs 20 requests, not 10,000.
 *
 * A multi that fails reports the first failing op; the ops after it are unknown
 * (RUNTIME_INCONSISTENCY), so the rest is checked again. Losses are rare, so this stays near one
 * request per chunk.
 */
export async function checkAll(client: Client, paths: readonly string[], deadline: number): Promise<boolean[]> {
  const exists = new Array<boolean>(paths.length).fill(true);
  const chunks: Promise<void>[] = [];
  for (let from = 0; from < paths.length; from += opsPerMulti)
    chunks.push(checkFrom(client, paths, from, Math.min(paths.length, from + opsPerMulti), exists, deadline));
  await Promise.all(chunks);
  return exists;
}

async function checkFrom(
  client: Client,
  paths: readonly string[],
  from: number,
  to: number,
  exists: boolean[],
  deadline: number,
): Promise<void> {
  while (from < to) {
    const transaction = client.transaction();
    for (let i = from; i < to; i++) transaction.check(paths[i]!);
    const failedAt = await request<number>(
      'multi check',
      deadline,
      (done) =>
        transaction.commit((error: unknown, results: readonly MultiResult[] | undefined) => {
          if (!error) return done(null, -1);
          const index = (results ?? []).findIndex(
            (r) => r.err !== undefined && r.err !== Exception.OK && r.err !== Exception.RUNTIME_INCONSISTENCY,
          );
          // Only a missing node is an answer about that lock; anything else (connection loss) is the request's failure.
          if (index < 0 || errorCode(error) !== Exception.NO_NODE) return done(error);
          done(null, index);
        }),
      undefined,
      client,
    );
    if (failedAt < 0) return;
    exists[from + failedAt] = false;
    from += failedAt + 1;
  }
}
