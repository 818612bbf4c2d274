import { InvalidArgumentError, type AcquireRequest, type Grant, type LockKind } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { siblingKey } from '../keys.js';
import { runScript, type ScriptArgument } from '../lua.js';
import { FairQueue, type FairSettings, type QueueScript } from './fair-queue.js';
import type { LockMode } from './mode.js';

/** One letter per kind, read by the scripts from the token (lua/kinds.ts). */
const modeLetter = { read: 'r', write: 'w', permit: 'p' } as const;
const letterOf = (token: string): string => token.charAt(token.lastIndexOf('.') + 1);

/**
 * The five keys of a read-write lock or a semaphore on `key`, in one hash slot (lua/kinds.ts). They
 * are apart from the key's mutex and from each other: a lock, a read-write lock and a semaphore of
 * one name are three locks.
 */
export function kindKeys(key: string, kind: 'rw' | 'sem'): string[] {
  return ['holders', 'meta', 'queue', 'waiters', 'fence'].map((part) => siblingKey(key, `${kind}:${part}`));
}

/** How many keys' script KEYS each primitive remembers (see keysOf). */
const keyCacheSize = 1_024;

/**
 * kindKeys(key, …) of a token's primitive, remembered for the keys in use (as the fair mutex's
 * keysOf): five sibling names built on every acquire, release and heartbeat otherwise. Bounded:
 * cleared when it fills up.
 */
const keyCaches = { rw: new Map<string, readonly string[]>(), sem: new Map<string, readonly string[]>() };

function keysOf(key: string, token: string): readonly string[] {
  const kind = letterOf(token) === 'p' ? 'sem' : 'rw';
  const cache = keyCaches[kind];
  let keys = cache.get(key);
  if (keys === undefined) {
    if (cache.size >= keyCacheSize) cache.clear();
    keys = kindKeys(key, kind);
    cache.set(key, keys);
  }
  return keys;
}

/**
 * Read-write locks and semaphores of the fair mode (the kinds driver): holders with server-clock
 * leases, FIFO across modes with runs of readers admitted together, room granted in place to the
 * head by the script that frees it, one message to that waiter's client (lua/kinds.ts). The waiting
 * side is the kit's ServerQueue (fair-queue.ts), with these tokens' scripts. It has its own client
 * id, grant channel and subscriber socket, so the fair mutex's hot path is untouched.
 */
export class FairKinds extends FairQueue implements LockMode {
  constructor(
    connection: Redis | Cluster,
    settings: FairSettings,
    private readonly backendName: string,
  ) {
    super(connection, settings);
  }

  /** A read, write or permit hold: its holder entry and lease end on the server's clock (a read-only script). */
  override validate(grant: Grant): Promise<boolean> {
    return runScript(this.connection, 'kind-holds', keysOf(grant.key, grant.token).slice(0, 2), [grant.token]).then(
      (reply) => Number(reply) === 1,
    );
  }

  tokenFor(request: AcquireRequest): string {
    return this.newToken(request.ttlMs, modeLetter[kindOf(request).type]);
  }

  // ---- the scripts of a token

  protected acquireCall(request: AcquireRequest, token: string, join: '0' | '1', downgrade = true): QueueScript {
    const channel = [this.channelPrefix(request.key), this.publish] as const;
    const kind = kindOf(request);
    const args: ScriptArgument[] = [
      token,
      request.ttlMs,
      this.settings.waiterLeaseMs,
      join,
      kind.type === 'permit' ? kind.permits : '',
      downgrade && kind.type === 'read' && kind.downgradeOf !== undefined ? kind.downgradeOf.token : '',
    ];
    // The channel only on Cluster (a single server's is the scripts' default), and no trailing '':
    // a plain read or write sends four arguments, as the fair mutex (lua/kinds.ts).
    if (this.settings.cluster) args.push(...channel);
    else while (args.at(-1) === '') args.pop();
    return { name: 'kind-acquire', keys: keysOf(request.key, token), args };
  }

  /** A heartbeat re-queues without the downgrade: the writer's hold it named may be gone by now. */
  protected override heartbeatCall(request: AcquireRequest, token: string): QueueScript {
    return this.acquireCall(request, token, '1', false);
  }

  protected leaveCall(key: string, token: string): QueueScript {
    const args = [token, this.channelPrefix(key), this.publish];
    return { name: 'kind-leave', keys: keysOf(key, token), args };
  }

  protected releaseCall(key: string, token: string): QueueScript {
    // The channel only on Cluster: a single server's is the release script's default.
    const args = this.settings.cluster ? [token, this.channelPrefix(key), this.publish] : [token];
    return { name: 'kind-release', keys: keysOf(key, token), args };
  }

  protected renewCall(key: string, token: string, ttlMs: number): QueueScript {
    return { name: 'kind-renew', keys: keysOf(key, token), args: [token, ttlMs] };
  }

  /** A kind-acquire reply, or InvalidArgumentError when the semaphore is in use with other permits. */
  protected override checked(request: AcquireRequest, reply: [number, number]): [number, number] {
    const kind = request.kind;
    if (reply[0] === -1 && kind?.type === 'permit') {
      throw new InvalidArgumentError(
        'permits',
        `the semaphore is in use with ${reply[1]} permits, not ${kind.permits}; every client of one key must pass the same permits`,
        { key: request.key, backend: this.backendName },
      );
    }
    return reply;
  }
}

function kindOf(request: AcquireRequest): LockKind {
  if (request.kind === undefined) throw new Error('unreachable: a mutex request reached the read-write / semaphore scripts');
  return request.kind;
}
