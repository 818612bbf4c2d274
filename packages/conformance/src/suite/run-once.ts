import { InvalidArgumentError, inOwnerFlow, type LastRun, type LockClient, type RunOnceOptions } from '@deadbolt/core';
import type { CaseContext, ConformanceCase } from './context.js';
import { aborted, assert, delay, rejection, waitUntil } from './util.js';

/**
 * Run-once jobs (ShedLock's lockAtLeastFor / lockAtMostFor): one winner among replicas, a hold on the
 * server's clock that outlives a fast job and its process, and a record of the last run.
 */

/**
 * Durations scaled to the backend: memcached counts whole seconds, and rounds a lease up by one more;
 * etcd leases a claim in whole seconds, at least its minimum TTL (runLeaseStepMs).
 */
function durations(ctx: CaseContext): { atLeast: number; atMost: number; slack: number } {
  const step = Math.max(ctx.capabilities.minTtlMs >= 1_000 ? ctx.capabilities.minTtlMs : 0, ctx.runLeaseStepMs);
  const slack = ctx.handOffBoundMs + 2 * step;
  const atLeast = 2 * ctx.ttlMs;
  // Far enough past atLeast + slack that a hold kept to lockAtMostForMs is told apart from one shortened.
  return { atLeast, atMost: atLeast + slack + 4 * ctx.ttlMs, slack };
}

/** Ends `client` as a crash would where the adapter can (no release, no record), else closes it. */
async function endProcess(ctx: CaseContext, client: LockClient): Promise<void> {
  if (ctx.canKill) await ctx.kill(client);
  else await client.close();
}

/** Calls runOnce until it runs, no later than `deadline`; the time it ran, or undefined. */
async function runsBy(client: LockClient, name: string, options: RunOnceOptions, deadline: number): Promise<number | undefined> {
  let ranAt: number | undefined;
  await waitUntil(
    async () => {
      const result = await client.runOnce(name, () => 'late', options);
      if (result.ran) ranAt = Date.now();
      return result.ran;
    },
    deadline - Date.now(),
    20,
  );
  return ranAt;
}

export const runOnceExactlyOne: ConformanceCase = {
  title: 'runOnce: of 8 clients calling at once, exactly one runs; so does one of two calls in one owner flow',
  async run(ctx) {
    const { atLeast, atMost } = durations(ctx);
    const clients = Array.from({ length: 8 }, () => ctx.client());
    let running = 0;
    const results = await Promise.all(
      clients.map((client, index) =>
        client.runOnce(
          'job',
          async () => {
            running += 1;
            await delay(20);
            return index;
          },
          { lockAtLeastForMs: 5 * atLeast, lockAtMostForMs: 5 * atMost },
        ),
      ),
    );
    const ran = results.filter((result) => result.ran);
    assert(ran.length === 1 && running === 1, `${ran.length} clients report ran and fn ran ${running} times; expected exactly 1`);
    // Two calls of one owner flow are two claims, not a re-entry (a backend that counts holds per owner).
    const [first] = clients;
    const twice = await inOwnerFlow(() =>
      Promise.all([0, 1].map(() => first!.runOnce('job-in-a-flow', () => 'ran', { lockAtLeastForMs: atLeast, lockAtMostForMs: atMost }))),
    );
    const ranInFlow = twice.filter((result) => result.ran).length;
    assert(ranInFlow === 1, `two runOnce calls in one owner flow: ${ranInFlow} ran; expected exactly 1`);
  },
};

export const runOnceHoldsAtLeast: ConformanceCase = {
  title: 'runOnce: a fast fn keeps the name until lockAtLeastForMs, even when its process exits right after; then it runs again',
  async run(ctx) {
    const { atLeast, atMost, slack } = durations(ctx);
    const options = { lockAtLeastForMs: atLeast, lockAtMostForMs: atMost };
    const [winner, other] = [ctx.client(), ctx.client()];
    const start = Date.now();
    const first = await winner.runOnce('job', () => 'fast', options);
    assert(first.ran, 'the only caller of runOnce did not run');
    const settledAt = Date.now();
    // The process exits: no release, no more calls. The server's lease alone must keep the name.
    await endProcess(ctx, winner);
    // The server's lease began after `start`: any run before start + atLeast is too early.
    let checked = 0;
    while (Date.now() < start + atLeast - 50) {
      const early = await other.runOnce('job', () => 'early', options);
      const at = Date.now() - start;
      assert(!early.ran || at >= atLeast, `another client ran the job ${at} ms after a run held for at least ${atLeast} ms`);
      checked += 1;
      await delay(Math.min(50, Math.max(0, start + atLeast - 50 - Date.now())));
    }
    if (checked === 0) console.info(`[deadbolt conformance] ${ctx.name}: the run took ${settledAt - start} ms, no early check`);
    const ranAt = await runsBy(other, 'job', options, settledAt + atLeast + slack);
    assert(
      ranAt !== undefined,
      `the job did not run again within ${atLeast} + ${slack} ms of the fast run (lockAtMostForMs ${atMost} ms): the lease was not shortened`,
    );
  },
};

export const runOnceCrashFreesAtMost: ConformanceCase = {
  title: 'runOnce: a winner that dies mid-fn frees the name at lockAtMostForMs',
  async run(ctx) {
    const { atLeast, atMost, slack } = durations(ctx);
    const options = { lockAtLeastForMs: atLeast, lockAtMostForMs: atMost };
    const [winner, other] = [ctx.client(), ctx.client()];
    let startedAt = 0;
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const run = winner.runOnce(
      'job',
      async ({ signal }) => {
        startedAt = Date.now();
        started();
        await aborted(signal, atMost + slack + 60_000).catch(() => undefined);
      },
      options,
    );
    run.catch(() => undefined);
    await Promise.race([running, run.then(() => Promise.reject(new Error('runOnce settled before fn started')))]);
    await endProcess(ctx, winner);
    const busy = await other.runOnce('job', () => 'too early', options);
    assert(!busy.ran || Date.now() - startedAt >= atLeast, 'another client ran the job while the dead winner still held it');
    const ranAt = await runsBy(other, 'job', options, startedAt + atMost + slack);
    assert(ranAt !== undefined, `the dead winner's name was still taken ${atMost} + ${slack} ms after its run started`);
  },
};

export const runOnceAbortsAtMost: ConformanceCase = {
  title: "runOnce: fn's signal aborts at lockAtMostForMs, and the run is recorded as aborted",
  async run(ctx) {
    const { slack } = durations(ctx);
    const atMost = 2 * ctx.ttlMs;
    const client = ctx.client();
    const start = Date.now();
    let abortedAt = 0;
    const error = await rejection(
      client.runOnce(
        'job',
        async ({ signal }) => {
          await aborted(signal, atMost + slack);
          abortedAt = Date.now() - start;
          throw signal.reason;
        },
        { lockAtLeastForMs: ctx.ttlMs, lockAtMostForMs: atMost },
      ),
    );
    assert(abortedAt > 0, `fn's signal did not abort within ${atMost} + ${slack} ms: ${String(error)}`);
    // The timer starts before the claim is sent; 5 ms for timer rounding.
    assert(abortedAt >= atMost - 5, `fn's signal aborted after ${abortedAt} ms, before lockAtMostForMs (${atMost} ms)`);
    const last = await client.lastRun('job');
    assert(last?.outcome === 'aborted', `lastRun after an aborted run says ${JSON.stringify(last)}`);
  },
};

export const runOnceRecordsLastRun: ConformanceCase = {
  title: 'runOnce: lastRun reports the runner, fence and outcome, read from another client',
  async run(ctx) {
    const { atLeast, atMost } = durations(ctx);
    const options = { lockAtLeastForMs: atLeast, lockAtMostForMs: atMost };
    const [winner, reader] = [ctx.client(), ctx.client()];
    assert((await reader.lastRun('job')) === null, 'lastRun of a job that never ran is not null');
    let fence: number | undefined;
    let during = null as LastRun | null;
    const before = Date.now();
    const ok = await winner.runOnce(
      'job',
      async (run) => {
        fence = run.fence;
        during = await reader.lastRun('job');
        return 42;
      },
      { ...options, runner: 'replica-a' },
    );
    assert(ok.ran && ok.value === 42, `runOnce gave ${JSON.stringify(ok)}`);
    assert(during?.outcome === 'running' && during.runner === 'replica-a', `lastRun during the run: ${JSON.stringify(during)}`);
    const last = await reader.lastRun('job');
    assert(last !== null, 'lastRun after a run is null on another client');
    assert(last.runner === 'replica-a' && last.outcome === 'ok', `lastRun after the run: ${JSON.stringify(last)}`);
    assert(last.fence === fence, `lastRun's fence ${last.fence} is not the run's ${fence}`);
    if (ctx.capabilities.fencing) assert(typeof fence === 'number', 'a fencing backend gave fn no fence');
    assert(last.startedAt.getTime() >= before - 1_000 && last.finishedAt !== undefined, `lastRun's times: ${JSON.stringify(last)}`);
    const failure = await rejection(
      winner.runOnce(
        'other-job',
        () => {
          throw new Error('boom');
        },
        options,
      ),
    );
    assert(failure instanceof Error && failure.message === 'boom', `a failing fn's error is not runOnce's: ${String(failure)}`);
    const failed = await reader.lastRun('other-job');
    assert(failed?.outcome === 'failed' && failed.error === 'boom', `lastRun of a failed run: ${JSON.stringify(failed)}`);
    assert(failed.runner === (await winner.lastRun('other-job'))?.runner, 'the two clients read different records');
  },
};

export const runOnceBadInput: ConformanceCase = {
  title: 'runOnce: an empty name, lockAtLeastForMs > lockAtMostForMs, bad durations and a non-function reject with InvalidArgumentError',
  async run(ctx) {
    const client = ctx.client();
    const fn = (): string => 'ran';
    const good = { lockAtLeastForMs: 100, lockAtMostForMs: 1_000 };
    const bad: [string, () => Promise<unknown>][] = [
      ['an empty name', () => client.runOnce('', fn, good)],
      ['lockAtLeastForMs > lockAtMostForMs', () => client.runOnce('job', fn, { lockAtLeastForMs: 2_000, lockAtMostForMs: 1_000 })],
      ['a fractional duration', () => client.runOnce('job', fn, { lockAtLeastForMs: 1.5, lockAtMostForMs: 1_000 })],
      ['a negative duration', () => client.runOnce('job', fn, { lockAtLeastForMs: -1, lockAtMostForMs: 1_000 })],
      ['a zero lockAtMostForMs', () => client.runOnce('job', fn, { lockAtLeastForMs: 0, lockAtMostForMs: 0 })],
      ['a non-function fn', () => client.runOnce('job', 'fn' as unknown as typeof fn, good)],
      ['an empty name for lastRun', () => client.lastRun('')],
    ];
    for (const [what, call] of bad) {
      const error = await rejection(call());
      assert(error instanceof InvalidArgumentError, `${what}: expected InvalidArgumentError, got ${String(error)}`);
    }
    assert((await client.lastRun('job')) === null, 'a rejected runOnce left a record');
  },
};

export const runOnceCases: readonly ConformanceCase[] = [
  runOnceExactlyOne,
  runOnceHoldsAtLeast,
  runOnceCrashFreesAtMost,
  runOnceAbortsAtMost,
  runOnceRecordsLastRun,
  runOnceBadInput,
];
