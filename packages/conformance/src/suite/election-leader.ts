import type { Election, LockClient, Term } from '@deadbolt/core';
import type { ConformanceCase } from './context.js';
import { needsElection } from './election.js';
import { assert, delay, waitUntil, within } from './util.js';

/** The first term of an election (its iterator kept open: the caller resigns). */
async function lead(election: Election, what: string): Promise<Term> {
  const next = await within(election[Symbol.asyncIterator]().next(), 10_000, what);
  assert(next.done !== true, `${election.id}'s election ended without a term`);
  return next.value;
}

function contention(client: LockClient): Promise<void> {
  return new Promise((resolve) => client.once('contended', () => resolve()));
}

/** After a crash, the server's lease (or session) ends within ttl; this much more for clocks and a session's close. */
const EXPIRY_SLACK_MS = 2_000;

export const electionLeaderExpires: ConformanceCase = {
  title: 'leader() stops naming a crashed leader once its lease or session has run out (nobody else campaigns)',
  requires: (options) => needsElection(options) ?? (options.kill ? undefined : 'no kill hook'),
  async run(ctx) {
    const ttlMs = Math.max(ctx.ttlMs, 1_000);
    const crashing = ctx.client();
    const observer = ctx.client().elect('expires', { id: 'observer' });
    await lead(crashing.elect('expires', { id: 'a', ttlMs }), 'a becoming leader');
    assert((await observer.leader()) === 'a', 'leader() does not name the leader');
    // No release, no more renewals: only the server's lease or session can end the term.
    const killedAt = Date.now();
    await ctx.kill(crashing);
    const boundMs = ttlMs + EXPIRY_SLACK_MS;
    let named: string | null = 'a';
    const gone = await waitUntil(
      async () => {
        named = await observer.leader();
        return named === null;
      },
      boundMs,
      100,
    );
    assert(gone, `leader() still named ${String(named)} ${Date.now() - killedAt} ms after its leader crashed (ttl ${ttlMs} ms)`);
    console.info(`[deadbolt conformance] ${ctx.name}: a crashed leader unnamed after ${Date.now() - killedAt} ms (ttl ${ttlMs} ms)`);
  },
};

export const electionLeaderFresh: ConformanceCase = {
  title: 'leader() asked again through one client follows every change made through other clients (no remembered answer)',
  requires: needsElection,
  async run(ctx) {
    // One observer (one client, one connection) asks after each change.
    const observer = ctx.client().elect('fresh', { id: 'observer' });
    const a = ctx.client().elect('fresh', { id: 'a' });
    const b = ctx.client().elect('fresh', { id: 'b' });
    assert((await observer.leader()) === null, 'leader() names someone before anyone campaigned');
    await lead(a, 'a becoming leader');
    assert((await observer.leader()) === 'a', 'leader() does not name a while a leads');
    await a.resign();
    let named = await observer.leader();
    assert(named === null, `leader() still names ${String(named)} after a resigned`);
    await lead(b, 'b becoming leader');
    named = await observer.leader();
    assert(named === 'b', `leader() names ${String(named)} after b became leader, expected b`);
    named = await a.leader();
    assert(named === 'b', `a's own leader() names ${String(named)} after b became leader, expected b`);
    await b.resign();
    named = await observer.leader();
    assert(named === null, `leader() still names ${String(named)} after b resigned`);
  },
};

/** The leader keeps its term for this many of its ttls, renewed all along. */
const TTLS_HELD = 3;

export const electionRenewalExtends: ConformanceCase = {
  title: `a term renewed past ${TTLS_HELD} ttls keeps its leader: a waiting participant is not elected meanwhile, and takes over on resign`,
  requires: needsElection,
  async run(ctx) {
    const ttlMs = Math.max(ctx.ttlMs, 1_000);
    const [clientA, clientB] = [ctx.client(), ctx.client()];
    const a = clientA.elect('renewed', { id: 'a', ttlMs });
    const b = clientB.elect('renewed', { id: 'b', ttlMs });
    const first = await lead(a, 'a becoming leader');
    const grantedAt = Date.now();
    const queued = contention(clientB);
    let electedAt: number | undefined;
    const bNext = b[Symbol.asyncIterator]()
      .next()
      .then((next) => {
        electedAt = Date.now();
        return next;
      });
    await within(queued, 10_000, 'b queueing behind a');
    // Only renewals keep a's term past its first ttl: time passes, nothing else happens.
    await delay(TTLS_HELD * ttlMs);
    assert(
      electedAt === undefined,
      `b was elected ${electedAt! - grantedAt} ms into a's term (ttl ${ttlMs} ms) while a still led: a renewal did not extend the lease`,
    );
    assert(!first.signal.aborted, `a lost its term within ${TTLS_HELD} ttls although renewed: ${String(first.signal.reason)}`);
    const named = await b.leader();
    assert(named === 'a', `leader() names ${String(named)} after ${TTLS_HELD} ttls of a's renewed term, expected a`);
    await a.resign();
    const second = await within(bNext, 10_000, 'b becoming leader after a resigned');
    assert(second.done !== true, 'b ended without a term');
    assert(second.value.term > first.term, `term ${second.value.term} after ${first.term}`);
    await b.resign();
  },
};

export const electionLeaderCases: readonly ConformanceCase[] = [electionLeaderExpires, electionLeaderFresh, electionRenewalExtends];
