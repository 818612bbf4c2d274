import type { Election, LockClient, Term } from '@deadbolt/core';
import type { ConformanceCase, ResolvedOptions } from './context.js';
import { aborted, assert, delay, within } from './util.js';

export function needsElection(options: ResolvedOptions): string | undefined {
  return options.capabilities.election === true ? undefined : 'capabilities.election is false';
}

function contention(client: LockClient): Promise<void> {
  return new Promise((resolve) => client.once('contended', () => resolve()));
}

/** The first term of an election, through its iterator (kept open: the caller ends it). */
async function firstTerm(election: Election): Promise<{ term: Term; iterator: AsyncIterator<Term> }> {
  const iterator = election[Symbol.asyncIterator]();
  const next = await iterator.next();
  assert(next.done !== true, `election ${election.id} ended without a term`);
  return { term: next.value, iterator };
}

interface Interval {
  readonly id: string;
  readonly term: number;
  readonly start: number;
  readonly end: number;
}

const PARTICIPANTS = 5;
const TERMS = 12;

/**
 * The interval checker: each leader records when its term began (yielded) and ended (its signal
 * aborted, or its body finished, before the release); sorted by start, no interval may begin before
 * the previous one ended, and terms must grow in that order.
 */
export const electionOneLeader: ConformanceCase = {
  title: `${PARTICIPANTS} participants, ${TERMS} terms: at most one leader at any instant, terms increase`,
  requires: needsElection,
  async run(ctx) {
    const intervals: Interval[] = [];
    const elections = Array.from({ length: PARTICIPANTS }, (_, i) =>
      ctx.client().elect('leader', { id: `p${i}`, ttlMs: Math.max(ctx.ttlMs, 5_000) }),
    );
    const campaign = Promise.all(
      elections.map(async (election) => {
        for await (const term of election) {
          const start = performance.now();
          let end = Number.NaN;
          term.signal.addEventListener('abort', () => (end = Number.isNaN(end) ? performance.now() : end), { once: true });
          await delay(5 + Math.floor(Math.random() * 20));
          if (Number.isNaN(end)) end = performance.now();
          intervals.push({ id: election.id, term: term.term, start, end });
          if (intervals.length >= TERMS) await Promise.all(elections.map((e) => e.resign()));
        }
      }),
    );
    await within(campaign, 60_000, `the election (${intervals.length} of ${TERMS} terms)`);
    assert(intervals.length >= TERMS, `only ${intervals.length} terms`);
    const sorted = [...intervals].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i += 1) {
      const [before, after] = [sorted[i - 1]!, sorted[i]!];
      assert(
        after.start >= before.end,
        `two leaders at once: ${after.id} (term ${after.term}) began ${(before.end - after.start).toFixed(1)} ms before ${before.id} (term ${before.term}) ended`,
      );
      assert(after.term > before.term, `terms not increasing: ${before.id} had ${before.term}, then ${after.id} had ${after.term}`);
    }
  },
};

export const electionTermsIncrease: ConformanceCase = {
  title: 'terms strictly increase across leaders in different clients, and leader() names each',
  requires: needsElection,
  async run(ctx) {
    const terms: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const election = ctx.client().elect('terms', { id: `n${i}` });
      const { term } = await within(firstTerm(election), 10_000, `participant n${i} becoming leader`);
      assert(Number.isSafeInteger(term.term), `term ${term.term} is not an integer`);
      terms.push(term.term);
      const named = await ctx.client().elect('terms', { id: 'observer' }).leader();
      assert(named === `n${i}`, `leader() says ${String(named)}, expected n${i}`);
      await election.resign();
      assert(term.signal.aborted, 'the term signal did not abort on resign');
    }
    for (let i = 1; i < terms.length; i += 1) assert(terms[i]! > terms[i - 1]!, `terms not strictly increasing: ${terms.join(', ')}`);
    assert((await ctx.client().elect('terms', { id: 'observer' }).leader()) === null, 'leader() names someone after everyone resigned');
  },
};

export const electionResignHandOff: ConformanceCase = {
  title: 'resign hands leadership to a waiting participant within one hand-off',
  requires: needsElection,
  async run(ctx) {
    const [clientA, clientB] = [ctx.client(), ctx.client()];
    // A long lease: only a real hand-off, not an expiry, can meet the bound.
    const ttlMs = Math.max(ctx.ttlMs, 30_000);
    const a = clientA.elect('handoff', { id: 'a', ttlMs });
    const b = clientB.elect('handoff', { id: 'b', ttlMs });
    const first = await within(firstTerm(a), 10_000, 'a becoming leader');
    const queued = contention(clientB);
    const bIterator = b[Symbol.asyncIterator]();
    const bNext = bIterator.next();
    await within(queued, 10_000, 'b queueing behind a');
    const resignedAt = Date.now();
    await a.resign();
    const second = await within(bNext, ctx.handOffBoundMs * 2 + 1_000, 'b becoming leader after a resigned');
    const latency = Date.now() - resignedAt;
    console.info(`[deadbolt conformance] ${ctx.name}: election hand-off ${latency} ms (bound ${ctx.handOffBoundMs} ms)`);
    assert(second.done !== true, 'b ended without a term');
    assert(latency < ctx.handOffBoundMs, `hand-off after resign took ${latency} ms, bound ${ctx.handOffBoundMs} ms`);
    assert(first.term.signal.aborted, "a's term signal did not abort on resign");
    assert(second.value.term > first.term.term, `term ${second.value.term} after ${first.term.term}`);
    assert((await first.iterator.next()).done === true, "a's iteration did not end after resign");
    assert((await a.leader()) === 'b', 'leader() does not name b');
    await b.resign();
  },
};

export const electionKilledLeader: ConformanceCase = {
  title: 'a killed leader loses its signal and is replaced within its lease or session',
  requires: (options) => needsElection(options) ?? (options.kill ? undefined : 'no kill hook'),
  async run(ctx) {
    const [clientA, clientB] = [ctx.client(), ctx.client()];
    const a = clientA.elect('killed', { id: 'a', ttlMs: ctx.ttlMs });
    const b = clientB.elect('killed', { id: 'b', ttlMs: ctx.ttlMs });
    const first = await within(firstTerm(a), 10_000, 'a becoming leader');
    const queued = contention(clientB);
    const bNext = b[Symbol.asyncIterator]().next();
    await within(queued, 10_000, 'b queueing behind a');
    const killedAt = Date.now();
    await ctx.kill(clientA);
    const second = await within(bNext, ctx.killBoundMs, `b replacing the killed leader (bound ${ctx.killBoundMs} ms)`);
    console.info(
      `[deadbolt conformance] ${ctx.name}: killed leader replaced after ${Date.now() - killedAt} ms (bound ${ctx.killBoundMs} ms)`,
    );
    assert(second.done !== true, 'b ended without a term');
    assert(second.value.term > first.term.term, `term ${second.value.term} after ${first.term.term}`);
    await aborted(first.term.signal, ctx.killBoundMs);
    await b.resign();
  },
};

export const electionCases: readonly ConformanceCase[] = [
  electionOneLeader,
  electionTermsIncrease,
  electionResignHandOff,
  electionKilledLeader,
];
