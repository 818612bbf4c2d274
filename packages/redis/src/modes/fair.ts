import type { AcquireRequest } from '@deadbolt/core/adapter';
import type { LockMode } from './mode.js';
import { FairQueue, fairKeys, type QueueScript } from './fair-queue.js';

export { fairCapabilities, fairKeys, type FairSettings } from './fair-queue.js';

/**
 * Fair (FIFO) locks with the hand-off done by the server (primitives.md section 1.3): the lock is
 * a plain token under the exact key (as in setnx, so SET NX clients still exclude it) and waiters
 * queue beside it. Release, expiry and a giving-up waiter GRANT the lock in place to the head
 * waiter inside the same script, then send one message to that waiter's client: a contended
 * hand-off costs one round trip (Redisson's RedissonFairLock notifies the head, which then has to
 * acquire again: two). The waiting side (re-checks, heartbeats, leaving) is fair-queue.ts; tryAcquire
 * never barges past a non-empty queue (the script refuses it).
 */
export class FairMode extends FairQueue implements LockMode {
  private readonly keyCache = new Map<string, readonly string[]>();

  /** The token format the fair scripts read ("<clientId>.<ttl>.<n>"). */
  tokenFor(request: AcquireRequest): string {
    return this.newToken(request.ttlMs);
  }

  protected acquireCall(request: AcquireRequest, token: string, join: '0' | '1'): QueueScript {
    const { ttlMs, key } = request;
    const lease = this.settings.waiterLeaseMs;
    // On a single server the script defaults the channel arguments (standaloneGrantPrefix, PUBLISH).
    const args = this.settings.cluster ? [token, ttlMs, lease, join, this.channelPrefix(key), this.publish] : [token, ttlMs, lease, join];
    return { name: 'fair-acquire', keys: this.keysOf(key), args };
  }

  protected releaseCall(key: string, token: string): QueueScript {
    // The channel only on Cluster: a single server's is the release script's default.
    const args = this.settings.cluster ? [token, this.channelPrefix(key), this.publish] : [token];
    return { name: 'fair-release', keys: this.keysOf(key), args };
  }

  protected renewCall(key: string, token: string, ttlMs: number): QueueScript {
    return { name: 'compare-pexpire', keys: [key], args: [token, ttlMs] };
  }

  protected leaveCall(key: string, token: string): QueueScript {
    return { name: 'fair-leave', keys: this.keysOf(key), args: [token, this.channelPrefix(key), this.publish] };
  }

  /**
   * fairKeys(key), remembered for the keys in use: three sibling names built and flattened on every
   * acquire and release showed in the uncontended profile. Bounded: cleared when it fills up.
   */
  private keysOf(key: string): readonly string[] {
    let keys = this.keyCache.get(key);
    if (keys === undefined) {
      if (this.keyCache.size >= keyCacheSize) this.keyCache.clear();
      keys = fairKeys(key);
      this.keyCache.set(key, keys);
    }
    return keys;
  }
}

/** How many keys' script KEYS a fair mode remembers (see keysOf). */
const keyCacheSize = 1_024;
