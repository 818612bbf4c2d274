import { setTimeout as delay } from 'node:timers/promises';

/** What waitUntilReady needs to know besides the probe. */
export interface ReadyOptions {
  /** Named in the error, e.g. "redis (process) on 127.0.0.1:6379". */
  readonly what: string;
  readonly timeoutMs: number;
  /** Returns a reason when waiting is pointless (the process exited); checked every round. */
  readonly failed?: () => string | undefined;
  /** Appended to a timeout error (e.g. the tail of the server's log). */
  readonly diagnostics?: () => Promise<string> | string;
}

/**
 * Polls `probe` until it answers true or the deadline passes. The pause between attempts grows
 * from 25 ms to 250 ms: this is readiness polling of a protocol, not a fixed sleep, so a fast
 * server is seen within a few ms and a slow one costs a few probes per second.
 */
export async function waitUntilReady(probe: (timeoutMs: number) => Promise<boolean>, options: ReadyOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let pauseMs = 25;
  for (;;) {
    const reason = options.failed?.();
    if (reason !== undefined) throw new Error(`${options.what} did not start: ${reason}${await tail(options)}`);
    const left = deadline - Date.now();
    if (left <= 0) break;
    if (await probe(Math.min(1_000, Math.max(left, 100)))) return;
    if (Date.now() + pauseMs >= deadline) break;
    await delay(pauseMs);
    pauseMs = Math.min(250, pauseMs * 2);
  }
  throw new Error(`${options.what} did not answer within ${options.timeoutMs} ms${await tail(options)}`);
}

async function tail(options: ReadyOptions): Promise<string> {
  if (options.diagnostics === undefined) return '';
  try {
    const text = await options.diagnostics();
    return text === '' ? '' : `\n--- log tail ---\n${text}`;
  } catch {
    return '';
  }
}
