import { randomUUID } from 'node:crypto';
import type { AcquireRequest, AttemptResult, Grant, LockBackend } from '../backend.js';
import { LockLostError, UnsupportedOperationError } from '../errors.js';
import type { PrimitiveHost } from '../primitive-host.js';
import type { RunsDriver } from '../contract/drivers.js';
import { driversOf } from '../contract/legacy.js';
import { decodeRun, encodeRun, errorMessage } from './record.js';
import type { LastRun, RunContext, RunOnceOptions, RunOnceResult, RunOutcome } from './types.js';
import { validateRunOnce } from './validate.js';

/**
 * ShedLock's policy, held once here: one claim that never waits, with a lease of lockAtMostForMs on
 * the server's clock and no renewal; the winner runs `fn`; when `fn` settles before
 * lockAtLeastForMs the lease is shortened (not released) to what remains of it, so the name stays
 * taken even if this process exits right after; later than that, it is released.
 */
export async function runOnce<T>(
  host: PrimitiveHost,
  name: string,
  fn: (context: RunContext) => Promise<T> | T,
  options: RunOnceOptions,
): Promise<RunOnceResult<T>> {
  validateRunOnce(name, fn, options, host.label());
  host.assertOpen(name);
  options.signal?.throwIfAborted();
  const backend = await host.backend();
  const runs = runsOf(backend, name);
  const ttlMs = Math.max(options.lockAtMostForMs, backend.capabilities.minTtlMs);
  const plan = host.plan(backend, name, { ttlMs, autoRenew: false }, false);
  // An owner of its own per claim: two runs of one owner flow must not re-enter (hash-reentrant counts holds per owner).
  const request: AcquireRequest = { key: plan.fullKey, owner: `${host.clientId}:run:${randomUUID()}`, ttlMs, onLost: () => undefined };
  const sentAt = Date.now();
  const grant = claimedGrant(await host.call(backend, 'runOnce', name, () => claim(backend, runs, request)));
  if (grant === undefined) return { ran: false };
  // The server's lease began after `sentAt` and before this answer: measuring the rest of
  // lockAtLeastForMs from the answer can only lengthen the hold, never cut it short.
  const claimedAt = Date.now();
  const runId = randomUUID();
  const runner = options.runner ?? host.clientId;
  const started = Date.now();
  const base = { runner, started, ...(grant.fence === undefined ? {} : { fence: grant.fence }) };
  try {
    await host.call(backend, 'runOnce', name, () => runs.saveRun(plan.fullKey, runId, encodeRun({ ...base, outcome: 'running' })));
  } catch (error) {
    await shorten(host, backend, runs, name, grant, 0).catch(() => false);
    throw error;
  }
  const abort = abortAtMost(host, name, sentAt + options.lockAtMostForMs, options.signal);
  let outcome: RunOutcome = 'ok';
  let failure: unknown;
  let value: T | undefined;
  try {
    value = await fn({ signal: abort.signal, fence: grant.fence });
  } catch (error) {
    outcome = abort.signal.aborted ? 'aborted' : 'failed';
    failure = error;
  } finally {
    abort.dispose();
  }
  const finished = encodeRun({
    ...base,
    finished: Date.now(),
    outcome,
    ...(outcome === 'ok' ? {} : { error: errorMessage(failure) }),
  });
  // Record first, then shorten: once the name is free a new run may write its own record.
  await host
    .call(backend, 'runOnce', name, () => runs.saveRun(plan.fullKey, runId, finished, runId), { release: true })
    .catch((error: unknown) => report(host, name, error));
  const keepMs = options.lockAtLeastForMs - (Date.now() - claimedAt);
  await shorten(host, backend, runs, name, grant, Math.max(0, keepMs)).catch((error: unknown) => report(host, name, error));
  if (outcome !== 'ok') throw failure;
  return { ran: true, value: value as T };
}

/** The job's last run as the server keeps it, or null. */
export async function lastRun(host: PrimitiveHost, name: string): Promise<LastRun | null> {
  validateRunOnce(name, () => undefined, { lockAtLeastForMs: 0, lockAtMostForMs: 1 }, host.label());
  host.assertOpen(name);
  const backend = await host.backend();
  const runs = runsOf(backend, name);
  const plan = host.plan(backend, name, { ttlMs: backend.capabilities.minTtlMs }, false);
  const text = await host.call(backend, 'lastRun', name, () => runs.loadRun(plan.fullKey));
  return text === undefined ? null : (decodeRun(text) ?? null);
}

function runsOf(backend: LockBackend, name: string): RunsDriver {
  const runs = driversOf(backend).runs;
  if (runs === undefined || (backend.capabilities.lease === 'session' && typeof runs.claimRun !== 'function')) {
    throw new UnsupportedOperationError('runOnce', `the ${backend.name} backend keeps no run records on its server`, {
      key: name,
      backend: backend.name,
    });
  }
  return runs;
}

/**
 * The backend's own claim, or a plain attempt with ttl = lockAtMostForMs (never renewed). A plain
 * attempt's answer goes back as it came, so the call guard releases a grant that lands after core
 * gave up; a claim of the backend's own is boxed, as `release` does not know it: a late one stands
 * until lockAtMostForMs (the job is skipped, never run twice).
 */
async function claim(
  backend: LockBackend,
  runs: RunsDriver,
  request: AcquireRequest,
): Promise<AttemptResult | { readonly claimed?: Grant }> {
  if (runs.claimRun) return { claimed: await runs.claimRun(request) };
  return backend.tryAcquire(request);
}

function claimedGrant(answer: AttemptResult | { readonly claimed?: Grant }): Grant | undefined {
  if ('acquired' in answer) return answer.acquired ? answer.grant : undefined;
  return answer.claimed;
}

/** The lease ends `keepMs` from the server's now; 0 ends it. Not cut short by close(): the hold must stand. */
function shorten(
  host: PrimitiveHost,
  backend: LockBackend,
  runs: RunsDriver,
  name: string,
  grant: Grant,
  keepMs: number,
): Promise<boolean> {
  const step = (): Promise<boolean> => {
    if (runs.shortenRun) return runs.shortenRun(grant, keepMs);
    return keepMs > 0 ? backend.renew(grant, Math.max(keepMs, backend.capabilities.minTtlMs)) : backend.release(grant);
  };
  return host.call(backend, 'runOnce', name, step, { release: true });
}

/** fn's signal: aborts at lockAtMostForMs (from before the claim was sent), on the caller's signal, and on close(). */
function abortAtMost(host: PrimitiveHost, name: string, deadline: number, given: AbortSignal | undefined) {
  const controller = new AbortController();
  const timer = setTimeout(
    () =>
      controller.abort(new LockLostError('lockAtMostForMs ran out: the name may be claimed again', { key: name, backend: host.label() })),
    Math.max(0, deadline - Date.now()),
  );
  const sources = [host.closing, ...(given ? [given] : [])];
  const listeners = sources.map((source) => {
    const listener = (): void => controller.abort(source.reason);
    if (source.aborted) listener();
    else source.addEventListener('abort', listener, { once: true });
    return listener;
  });
  return {
    signal: controller.signal,
    dispose(): void {
      clearTimeout(timer);
      sources.forEach((source, index) => source.removeEventListener('abort', listeners[index]!));
    },
  };
}

function report(host: PrimitiveHost, name: string, error: unknown): void {
  host.emit('error', { key: name, error: error instanceof Error ? error : new Error(String(error)) });
}
