import { createLockClient, type LockClient } from '@deadbolt/core';
import { resolveBackendUrl } from './backend-url.js';
import { describeFailure } from './failures.js';
import type { Io, Output } from './output.js';
import { UsageError } from './usage-error.js';

/**
 * Runs an operator command (inspect, list, release, watch) with a client of --url or DEADBOLT_URL:
 * its secrets hidden from every line, a library failure reported with its exit code, the client
 * closed in the end.
 */
export async function withOperatorClient(
  url: string | undefined,
  io: Io,
  output: Output,
  usage: string,
  body: (client: LockClient) => Promise<number>,
): Promise<number> {
  const backend = resolveBackendUrl(url, io.env, usage);
  output.hide(backend.secrets);
  let client: LockClient;
  try {
    client = createLockClient(backend.text);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), usage);
  }
  try {
    return await body(client);
  } catch (error) {
    const failure = describeFailure(error);
    output.error(failure.message);
    return failure.exitCode;
  } finally {
    await client.close().catch(() => undefined);
  }
}
