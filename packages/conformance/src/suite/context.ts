import { randomUUID } from 'node:crypto';
import type { Capabilities, LockClient } from '@deadbolt/core';
import type { TcpProxy } from '../servers/tcp-proxy.js';
import { within } from './util.js';
import { untracked } from './handles.js';

/** What the suite needs of a server fixture: a way to stop it for good. */
export interface ServerLike {
  stop(): Promise<void>;
}

/** Fault hooks an adapter's test file provides; a case that needs a missing hook is skipped. */
export interface FaultHooks<S extends ServerLike = ServerLike> {
  restart?(server: S): Promise<void>;
  pause?(server: S): Promise<void>;
  resume?(server: S): Promise<void>;
  down?(server: S): Promise<void>;
  up?(server: S): Promise<void>;
  /** The server drops every client connection (CLIENT KILL, pg_terminate_backend): a killed connection mid-hold. */
  killConnections?(server: S): Promise<void>;
}

export interface ConformanceOptions<S extends ServerLike = ServerLike> {
  /** Names the adapter configuration in the test output. */
  name: string;
  /** Given up front so that skips are decided when vitest collects the cases. */
  capabilities: Capabilities;
  /** Starts the server(s) once for the whole suite; stopped after it. */
  servers?: () => Promise<S>;
  /** Each call returns a NEW client with its own connections. */
  create: (server: S | undefined, config: { prefix: string }) => LockClient;
  faults?: FaultHooks<S>;
  /** Lease used by time-based cases. Default: max(minTtlMs, 300). */
  ttlMs?: number;
  /** Bound on release-to-waiter hand-off. Default: 500 ms with notifications, else 1000 ms. */
  handOffBoundMs?: number;
  /** How many locks the hygiene scale case holds. Default 10 000. */
  scaleLocks?: number;
  /** acquireAll calls in the multi-lock stress, over all 20 clients. Default 1 000 in process, 100 against servers (CI time). */
  multiStressIterations?: number;
  /** How long one acquireAll of the stress may wait: a deadlock shows as a LockTimeoutError after it. Default 15 000. */
  multiWaitMs?: number;
  /**
   * Ends a client as a crash would: no release, no more renewals, its connections gone. Election's
   * killed-leader case needs it (skipped without). The client's leases must end on the server by
   * themselves (ttl or session); `close()` is still called on it afterwards.
   */
  kill?: (client: LockClient, server: S | undefined) => Promise<void>;
  /** How long after a kill another leader may take over. Default: ttlMs + handOffBoundMs + 3 000 ms. */
  killBoundMs?: number;
  /**
   * Counts what the server keeps for keys starting with `keyPrefix` (the full prefix, as the
   * backend sees it): holders, queue entries, nodes, rows. The chaos cases require 0 at the end.
   */
  residue?: (server: S | undefined, keyPrefix: string) => Promise<number>;
  /**
   * Whole groups (keys of caseGroups) this configuration leaves out, each with the reason, which is
   * printed in every skipped title: e.g. CI time, when another configuration runs the same code.
   */
  skipGroups?: Readonly<Record<string, string>>;
  /** Operations of each chaos case (random aborts, timeouts and crashes). Default 200. */
  chaosOperations?: number;
  /** What the fair group needs besides `capabilities.fair` and `kill` (skipped without). */
  fair?: FairHooks;
  /**
   * The backend records a semaphore's `permits`, so a client passing another number for a semaphore
   * in use gets InvalidArgumentError (memory, ZooKeeper, memcached, redis fair). Absent: that case is
   * skipped, naming this option.
   */
  permitsRecorded?: boolean;
  /** How many waiters the many-waiters case queues on one key. Default 1 000 with notifications, else 20. */
  manyWaiters?: number;
  /** Their wait. Default max(60 s, 50 ms per waiter): generous (a loaded CI machine), the case proves service, not speed. */
  manyWaitersWaitMs?: number;
  /**
   * Commands the server has run so far (INFO commandstats, memcached stats, zk mntr, a memory
   * store's operation count): proves that rejected bad input sent none. Absent: that case is skipped.
   */
  commandCount?: (server: S | undefined) => Promise<number>;
  /**
   * A client whose configuration carries a credential (a URL password), and that credential: the
   * credential scan checks it is never printed. Absent (no credentials on this backend): skipped.
   */
  credentials?: (server: S | undefined, config: { prefix: string }) => { secret: string; client: LockClient };
  /**
   * Clients that reach the server through a TCP proxy: `target` says where the server listens (the
   * proxy forwards there), `create` makes a new client that connects to `proxy` instead (e.g. with
   * `proxy.rewrite(url)`). The silent-link case strands the proxy's connections. Absent: that case
   * is skipped, naming this option.
   */
  proxied?: {
    readonly target: (server: S | undefined) => { readonly host: string; readonly port: number };
    readonly create: (server: S | undefined, proxy: TcpProxy, config: { prefix: string }) => LockClient;
  };
  /**
   * Ends every hold of the mutex (or election) on `fullKey` on the server, behind its holder's back,
   * as an early expiry or a failover would (DEL the key, delete the row or node, end the session).
   * The fencing group's stale-handle cases need it (skipped without).
   */
  expireHold?: (server: S | undefined, fullKey: string) => Promise<void>;
  /**
   * A 'session' backend whose holds end at a local deadline it knows (ZooKeeper: the last answered
   * request + the session timeout, in `grant.validUntil`): the fencing group's jeopardy case, which
   * needs a deadline that a paused server lets run out, runs on it too. Absent: that case needs a ttl lease.
   */
  sessionDeadline?: boolean;
  /**
   * The step in which the backend leases a run-once claim, when coarser than its locks' (etcd grants
   * leases in whole seconds, at least its minimum TTL): the runOnce group widens its bounds by it.
   */
  runLeaseStepMs?: number;
}

/** The fair (FIFO) group's view of the adapter's queue. */
export interface FairHooks {
  /** How long a silent waiter keeps its place (the adapter's waiter lease, server clock). */
  readonly waiterLeaseMs: number;
  /** The longest a waiter that heard nothing may take to find a grant already made to it (its heartbeat). */
  readonly recheckBoundMs: number;
  /** From now on `client` misses every grant message (its sockets stay up): only its re-checks can find a grant. */
  loseGrantMessages(client: LockClient): void | Promise<void>;
}

export interface ResolvedOptions<S extends ServerLike = ServerLike> extends ConformanceOptions<S> {
  ttlMs: number;
  handOffBoundMs: number;
  scaleLocks: number;
  multiStressIterations: number;
  multiWaitMs: number;
  killBoundMs: number;
  chaosOperations: number;
  manyWaiters: number;
  manyWaitersWaitMs: number;
}

export function resolveOptions<S extends ServerLike>(options: ConformanceOptions<S>): ResolvedOptions<S> {
  const caps = options.capabilities;
  const ttlMs = options.ttlMs ?? Math.max(caps.minTtlMs, 300);
  const handOffBoundMs = options.handOffBoundMs ?? (caps.notifications ? 500 : 1000);
  const manyWaiters = options.manyWaiters ?? (caps.notifications ? 1_000 : 20);
  return {
    ...options,
    ttlMs,
    handOffBoundMs,
    scaleLocks: options.scaleLocks ?? 10_000,
    multiStressIterations: options.multiStressIterations ?? (options.servers ? 100 : 1_000),
    multiWaitMs: options.multiWaitMs ?? 15_000,
    killBoundMs: options.killBoundMs ?? ttlMs + handOffBoundMs + 3_000,
    chaosOperations: options.chaosOperations ?? 200,
    manyWaiters,
    manyWaitersWaitMs: options.manyWaitersWaitMs ?? Math.max(60_000, manyWaiters * 50),
  };
}

/** What one case gets: its own key namespace and a factory of clients that are closed after it. */
export interface CaseContext {
  readonly name: string;
  readonly capabilities: Capabilities;
  readonly ttlMs: number;
  readonly handOffBoundMs: number;
  readonly scaleLocks: number;
  readonly multiStressIterations: number;
  readonly multiWaitMs: number;
  readonly killBoundMs: number;
  /** ConformanceOptions.runLeaseStepMs, or 0. */
  readonly runLeaseStepMs: number;
  readonly manyWaiters: number;
  readonly manyWaitersWaitMs: number;
  /** The case's unique prefix: keys of different cases (and runs) never meet. */
  readonly prefix: string;
  /** A new client (own connections), on the case prefix unless another is given. Closed by the runner. */
  client(prefix?: string): LockClient;
  /** Runs a fault hook on the suite's server; throws when the hook is missing. */
  fault(hook: keyof FaultHooks): Promise<void>;
  /** Whether the adapter gave this fault hook (and a server to run it on). */
  hasFault(hook: keyof FaultHooks): boolean;
  /** Ends `client` as a crash would (options.kill); throws when the hook is missing. */
  kill(client: LockClient): Promise<void>;
  readonly chaosOperations: number;
  /** Whether the adapter gave a kill hook (options.kill). */
  readonly canKill: boolean;
  /** Server-side leftovers for this case's keys (options.residue); undefined without the hook. */
  readonly residue: (() => Promise<number>) | undefined;
  /** options.fair, when given. */
  readonly fair: FairHooks | undefined;
  /** The server's command count (options.commandCount); throws when missing. */
  commandCount(): Promise<number>;
  /** A client configured with a credential, and the credential (options.credentials); throws when missing. */
  credentialed(): { secret: string; client: LockClient };
  /** Where the server listens, for a proxy in front of it (options.proxied); throws when missing. */
  proxyTarget(): { readonly host: string; readonly port: number };
  /** A new client that connects through `proxy` (options.proxied), on the case prefix. Closed by the runner. */
  proxiedClient(proxy: TcpProxy): LockClient;
  /** Ends the holds of `key` (a key of this case: the prefix is added) on the server (options.expireHold); throws when missing. */
  expireHold(key: string): Promise<void>;
}

/** A case: a plain async function, plus when it applies. */
export interface ConformanceCase {
  readonly title: string;
  /** Returns undefined when the case applies, or the reason it is skipped. */
  readonly requires?: (options: ResolvedOptions) => string | undefined;
  readonly run: (ctx: CaseContext) => Promise<void>;
}

/** A `requires` for cases that need a ttl lease: the reason when the backend's lease is a session. */
export function needsTtl(options: ResolvedOptions): string | undefined {
  return options.capabilities.lease === 'ttl' ? undefined : `capabilities.lease is '${options.capabilities.lease}', not 'ttl'`;
}

/** A `requires` for cases that need these fault hooks and a server to run them on. */
export function needsFaults(...hooks: (keyof FaultHooks)[]) {
  return (options: ResolvedOptions): string | undefined => {
    const missing = hooks.filter((hook) => !options.faults?.[hook]);
    if (missing.length > 0) return `no faults.${missing.join('/')} hook`;
    return options.servers ? undefined : 'no servers';
  };
}

const runId = randomUUID().slice(0, 8);
let caseCounter = 0;

/**
 * Runs one case with a fresh context and closes every client the case made, also when it fails.
 * Tests (e.g. the mutant tests) call it directly.
 */
export async function runCase<S extends ServerLike>(testCase: ConformanceCase, options: ConformanceOptions<S>, server?: S): Promise<void> {
  const resolved = resolveOptions(options);
  caseCounter += 1;
  const prefix = `dbc-${runId}-${caseCounter}:`;
  const clients: LockClient[] = [];
  const ctx: CaseContext = {
    name: resolved.name,
    capabilities: resolved.capabilities,
    ttlMs: resolved.ttlMs,
    handOffBoundMs: resolved.handOffBoundMs,
    scaleLocks: resolved.scaleLocks,
    multiStressIterations: resolved.multiStressIterations,
    multiWaitMs: resolved.multiWaitMs,
    killBoundMs: resolved.killBoundMs,
    runLeaseStepMs: resolved.runLeaseStepMs ?? 0,
    fair: resolved.fair,
    manyWaiters: resolved.manyWaiters,
    manyWaitersWaitMs: resolved.manyWaitersWaitMs,
    prefix,
    client(otherPrefix?: string): LockClient {
      const client = resolved.create(server, { prefix: otherPrefix ?? prefix });
      clients.push(client);
      return client;
    },
    async fault(hook): Promise<void> {
      const fn = resolved.faults?.[hook];
      if (!fn || !server) throw new Error(`fault hook "${hook}" or server missing for ${resolved.name}`);
      // Outside any handle tracker: what the fault opens (an engine's HTTP socket, a restarted process's pipes) is not the clients'.
      await untracked(() => fn.call(resolved.faults, server));
    },
    hasFault: (hook) => resolved.faults?.[hook] !== undefined && server !== undefined,
    async kill(client): Promise<void> {
      if (!resolved.kill) throw new Error(`no kill hook for ${resolved.name}`);
      await resolved.kill(client, server);
    },
    chaosOperations: resolved.chaosOperations,
    canKill: resolved.kill !== undefined,
    residue: resolved.residue ? () => resolved.residue!(server, prefix) : undefined,
    async commandCount(): Promise<number> {
      if (!resolved.commandCount) throw new Error(`options.commandCount missing for ${resolved.name}`);
      return resolved.commandCount(server);
    },
    credentialed() {
      if (!resolved.credentials) throw new Error(`options.credentials missing for ${resolved.name}`);
      const made = resolved.credentials(server, { prefix });
      clients.push(made.client);
      return made;
    },
    proxyTarget() {
      if (!resolved.proxied) throw new Error(`options.proxied missing for ${resolved.name}`);
      return resolved.proxied.target(server);
    },
    proxiedClient(proxy) {
      if (!resolved.proxied) throw new Error(`options.proxied missing for ${resolved.name}`);
      const client = resolved.proxied.create(server, proxy, { prefix });
      clients.push(client);
      return client;
    },
    async expireHold(key) {
      if (!resolved.expireHold) throw new Error(`options.expireHold missing for ${resolved.name}`);
      await untracked(() => resolved.expireHold!(server, prefix + key));
    },
  };
  let failure: { error: unknown } | undefined;
  try {
    await testCase.run(ctx);
  } catch (error) {
    failure = { error };
  }
  // A close that never ends is a leak and a hang: name it, rather than let the runner's test
  // timeout say only that the case took too long (a CI run once timed out at 60 s in a case
  // whose every step is bounded, leaving the close as the one unbounded wait).
  const closing = Promise.allSettled(clients.map((client) => client.close()));
  const closed = await within(closing, CLOSE_BOUND_MS, 'client.close()').then(
    () => true,
    () => false,
  );
  // The case's own failure, if any, is the one to report.
  if (failure) throw failure.error;
  if (!closed) throw new Error(`${resolved.name}: a client's close() had not finished ${CLOSE_BOUND_MS} ms after the case`);
}

/** How long the clients of a case may take to close (QUIT, session close) on a loaded machine. */
const CLOSE_BOUND_MS = 15_000;
