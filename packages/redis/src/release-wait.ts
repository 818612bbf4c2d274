import { withDeadline } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { releaseChannel, waitingKey, waitingMarkMs } from './keys.js';
import { runScript } from './lua.js';
import type { WaitForChange } from './modes/mode.js';
import { ReleaseNotifier } from './notifier.js';
import { subscriberOf } from './subscriber.js';

/** waitForChange on the release channel of the modes whose release publishes (setnx, hash-reentrant). */
export interface ReleaseWait {
  readonly waitForChange: WaitForChange;
  /** Stops for good; the subscriber connection, if one was opened, for the backend to close. */
  close(): Redis | Cluster | undefined;
}

export function releaseWaitOn(connection: Redis | Cluster, deadlineMs: number): ReleaseWait {
  const notifier = new ReleaseNotifier(() => subscriberOf(connection));
  return {
    waitForChange: (key, maxWaitMs, signal) =>
      notifier.wait(releaseChannel(key), maxWaitMs, signal, () => stillHeld(connection, key, deadlineMs)),
    close: () => notifier.close(),
  };
}

/** After subscribing: is the lock still there? If not, the release happened before we listened. */
async function stillHeld(connection: Redis | Cluster, key: string, deadlineMs: number): Promise<boolean> {
  try {
    // Marks the key as waited on in the same step, so the next release publishes (markWaitingLua).
    return Number(await withDeadline(runScript(connection, 'mark-waiting', [key, waitingKey(key)], [waitingMarkMs]), deadlineMs)) > 0;
  } catch {
    return true; // unknown: the waiter's own timer bounds the wait
  }
}
