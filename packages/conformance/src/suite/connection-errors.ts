import { BackendUnavailableError, createLockClient } from '@deadbolt/core';
import { expect } from 'vitest';

/** A first acquire that fails (no server, a bad password, no such database): its error and how long it took. */
export async function failedFirstAcquire(url: string): Promise<{ error: Error; ms: number }> {
  const locks = createLockClient({ url, defaults: { waitMs: 0 } });
  const startedAt = Date.now();
  try {
    await locks.acquire('k');
    throw new Error('expected a failure');
  } catch (error) {
    return { error: error as Error, ms: Date.now() - startedAt };
  } finally {
    await locks.close();
  }
}

/** What a refused connection must say. */
export interface RefusedConnectionExpectation {
  /** The backend's name: every connection error names it. */
  readonly backend: string;
  /** Where it tried: `127.0.0.1:<port>` (a list for an ensemble). */
  readonly endpoint: string;
  /** Within the adapter's connect or command timeout plus this slack. */
  readonly withinMs: number;
  /** Default true: the system error (ECONNREFUSED) is named. */
  readonly systemError?: boolean;
  /** A password in the URL: never in the message, cause or stack. */
  readonly secret?: string;
}

/**
 * A URL nobody listens on: BackendUnavailableError naming the backend, the endpoint and ECONNREFUSED, within the
 * bound, with no password anywhere in it. Call inside an `it` of the adapter package.
 */
export async function expectRefusedConnection(url: string, expected: RefusedConnectionExpectation): Promise<void> {
  const { error, ms } = await failedFirstAcquire(url);
  expect(error).toBeInstanceOf(BackendUnavailableError);
  expect(error.message).toContain(expected.backend);
  expect(error.message).toContain(expected.endpoint);
  if (expected.systemError !== false) expect(error.message).toContain('ECONNREFUSED');
  expect(ms).toBeLessThan(expected.withinMs);
  if (expected.secret !== undefined) expectNoSecret(error, expected.secret);
}

/** The secret is in none of the message, the cause's message and the stack. */
export function expectNoSecret(error: Error, secret: string): void {
  const everything = `${error.message} ${String((error.cause as Error | undefined)?.message)} ${error.stack}`;
  expect(everything).not.toContain(secret);
}
