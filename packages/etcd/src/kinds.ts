import type { AcquireRequest, Grant } from '@deadbolt/core/adapter';
import type { Etcd3 } from 'etcd3';
import { contendersPrefix } from './keys.js';
import { waitForPredecessors, type Contention } from './mutex-recipe.js';
import { newestBelow, waitUntilUnblocked } from './queue-wait.js';
import { createDowngrade, downgradePrefix, readerBlocker, readPrefix, writePrefix, writerBlocker } from './rw-recipe.js';
import { checkPermits, permitPrefix, waitForPermit } from './semaphore-recipe.js';

/**
 * How each kind of hold (core's LockKind: none for the mutex, read, write, permit) contends: where
 * its key goes, its value, and when it holds. Every kind's grant is the same thing (our key and its
 * create_revision), so renew, validate and release do not tell kinds apart.
 */
export interface TurnContext {
  readonly client: Etcd3;
  /** False: one look, never a wait (tryAcquire). */
  readonly wait: boolean;
  readonly deadline: number;
  readonly signal: AbortSignal;
  readonly callTimeoutMs: number;
  /** Called once when we are queued behind someone. */
  readonly onBlocked: () => void;
}

export interface ContenderPlan {
  /** The prefix our key goes under (`N/`, `N/read/`, ...). */
  readonly keyPrefix: string;
  readonly value: Buffer;
  /** Whether we hold after our create (waiting if allowed); may throw to refuse (permits mismatch). */
  turn(contention: Contention, context: TurnContext): Promise<boolean>;
  /** A create of its own (the downgrade's); undefined: refused. Default: createContender. */
  readonly create?: (client: Etcd3, key: string, leaseId: string, options: { readonly deadline: number }) => Promise<string | undefined>;
}

/** A read of a kind that needs one look even when not waiting: the deadline passed in is "now". */
const deadlineOf = (context: TurnContext): number => (context.wait ? context.deadline : 0);

export function planFor(request: AcquireRequest, namespace: string, value: Buffer, backend: string): ContenderPlan {
  const lockPrefix = contendersPrefix(namespace, request.key);
  const kind = request.kind;
  if (kind === undefined) return mutexPlan(lockPrefix, value);
  if (kind.type === 'permit') {
    return {
      keyPrefix: permitPrefix(lockPrefix),
      value: Buffer.from(String(kind.permits), 'utf8'),
      turn: (contention, context) => {
        checkPermits({ revision: contention.ownerRevision, value: contention.ownerValue }, contention.myRevision, kind.permits, {
          key: request.key,
          backend,
        });
        return waitForPermit(context.client, permitPrefix(lockPrefix), contention.myRevision, kind.permits, {
          deadline: deadlineOf(context),
          signal: context.signal,
          callTimeoutMs: context.callTimeoutMs,
          onBlocked: context.onBlocked,
        });
      },
    };
  }
  const downgradeOf = kind.type === 'read' ? (kind.downgradeOf as (Grant & { revision?: string }) | undefined) : undefined;
  if (downgradeOf?.revision !== undefined) {
    const write = { token: downgradeOf.token, revision: downgradeOf.revision };
    return {
      keyPrefix: downgradePrefix(lockPrefix),
      value,
      // Granted at once, beside our own write: no one can stand between them.
      turn: () => Promise.resolve(true),
      create: (client, key, leaseId, options) => createDowngrade(client, key, leaseId, write, options),
    };
  }
  const blocker = kind.type === 'read' ? readerBlocker : writerBlocker;
  return {
    keyPrefix: kind.type === 'read' ? readPrefix(lockPrefix) : writePrefix(lockPrefix),
    value,
    turn: (contention, context) =>
      waitUntilUnblocked(
        context.client,
        blocker(context.client, lockPrefix, contention.myRevision, context.callTimeoutMs),
        deadlineOf(context),
        context.signal,
        context.onBlocked,
      ),
  };
}

/** Go's Mutex: the create txn already read the holder; a waiter watches the key just below its own. */
function mutexPlan(lockPrefix: string, value: Buffer): ContenderPlan {
  return {
    keyPrefix: lockPrefix,
    value,
    async turn(contention, context) {
      if (contention.ownerRevision === contention.myRevision) return true;
      if (!context.wait) return false;
      context.onBlocked();
      return waitForPredecessors(
        context.client,
        lockPrefix,
        contention.myRevision,
        context.deadline,
        context.signal,
        context.callTimeoutMs,
      );
    },
  };
}

/** A multi-lock's wait in one queue: the mutex's rule, looking once whatever the deadline. */
export function waitFirstInQueue(lockPrefix: string, myRevision: string, context: TurnContext): Promise<boolean> {
  return waitUntilUnblocked(
    context.client,
    async () => {
      const { kv, headerRevision } = await newestBelow(context.client, lockPrefix, myRevision, context.callTimeoutMs);
      return kv === undefined ? undefined : { key: kv.key, headerRevision };
    },
    deadlineOf(context),
    context.signal,
    context.onBlocked,
  );
}
