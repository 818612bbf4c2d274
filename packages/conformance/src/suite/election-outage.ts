import type { Election, LockClient, Term } from '@deadbolt/core';
import { type CaseContext, type ConformanceCase, needsFaults } from './context.js';
import { needsElection } from './election.js';
import { assert, delay, within } from './util.js';

const PARTICIPANTS = 3;
/** How long after the server is back a leader must be named again: a lease, a session and a capped backoff, with room. */
const leaderAgainBoundMs = (ctx: CaseContext, ttlMs: number): number => ttlMs + ctx.handOffBoundMs + 15_000;
/** One resignation's hand-off to a follower still campaigning (a follower may sit in its backoff). */
const HAND_OFF_AFTER_OUTAGE_MS = 15_000;

interface Candidacy {
  readonly election: Election;
  /** The term it leads in right now, if any. */
  current: Term | undefined;
  /** Set when its loop settled: a rejection is an outage that ended the candidacy. */
  settled: { readonly error?: unknown } | undefined;
  readonly loop: Promise<void>;
}

/** A participant that leads until its term's signal aborts (or it resigns), then campaigns again. */
function candidacy(client: LockClient, id: string, ttlMs: number, yielded: { id: string; term: number }[]): Candidacy {
  const election = client.elect('outage', { id, ttlMs });
  const state: { -readonly [K in keyof Candidacy]: Candidacy[K] } = {
    election,
    current: undefined,
    settled: undefined,
    loop: Promise.resolve(),
  };
  state.loop = (async () => {
    for await (const term of election) {
      yielded.push({ id, term: term.term });
      state.current = term;
      await new Promise<void>((resolve) => {
        if (term.signal.aborted) resolve();
        else term.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      state.current = undefined;
    }
  })().then(
    () => void (state.settled = {}),
    (error: unknown) => void (state.settled = { error }),
  );
  return state;
}

function assertAllIterating(candidacies: readonly Candidacy[], when: string): void {
  for (const each of candidacies) {
    assert(
      each.settled === undefined,
      `${each.election.id}'s election loop ${each.settled?.error === undefined ? 'ended' : `rejected (${String(each.settled.error)})`} ${when}: an outage must not end a candidacy`,
    );
  }
}

/** The participant leader() names, once that participant also holds a live term; undefined at the deadline. */
async function leaderAgain(observer: Election, candidacies: readonly Candidacy[], boundMs: number): Promise<Candidacy | undefined> {
  const end = Date.now() + boundMs;
  for (;;) {
    assertAllIterating(candidacies, 'while waiting for a leader');
    const named = await observer.leader().catch(() => null);
    const leader = candidacies.find((each) => each.election.id === named);
    if (leader?.current && !leader.current.signal.aborted) return leader;
    if (Date.now() >= end) return undefined;
    await delay(50);
  }
}

/**
 * Longer than the case's lease (2 s) and than a session (the suite's ZooKeeper configuration: 6 s):
 * every backend's leader loses its term, and every call fails meanwhile.
 */
const OUTAGE_MS = 7_000;

/** The outages the adapter's hooks allow: a restart (a blip), then the server down for OUTAGE_MS. */
function outages(ctx: CaseContext): { readonly what: string; readonly run: () => Promise<void> }[] {
  const kinds = [{ what: 'a restart', run: () => ctx.fault('restart') }];
  if (ctx.hasFault('down') && ctx.hasFault('up')) {
    kinds.push({
      what: `${OUTAGE_MS / 1000} s down`,
      run: async () => {
        await ctx.fault('down');
        try {
          await delay(OUTAGE_MS);
        } finally {
          await ctx.fault('up');
        }
      },
    });
  }
  return kinds;
}

export const electionSurvivesRestart: ConformanceCase = {
  title: `a server restart, then ${OUTAGE_MS / 1000} s down (where the hooks allow), ends no candidacy: ${PARTICIPANTS} loops keep iterating, a leader is named again after the server is back, each follower can still take over, and terms keep increasing`,
  requires: (options) => needsElection(options) ?? needsFaults('restart')(options),
  async run(ctx) {
    const ttlMs = Math.max(ctx.ttlMs, 2_000);
    const errors: Error[] = [];
    const yielded: { id: string; term: number }[] = [];
    const candidacies = Array.from({ length: PARTICIPANTS }, (_, i) => {
      const client = ctx.client();
      // Transient failures are reported here while the candidacy goes on.
      client.on('error', ({ error }) => errors.push(error));
      return candidacy(client, `p${i}`, ttlMs, yielded);
    });
    const observer = ctx.client().elect('outage', { id: 'observer' });
    try {
      let leader = await leaderAgain(observer, candidacies, 15_000);
      assert(leader, 'no leader before the outage');
      const boundMs = leaderAgainBoundMs(ctx, ttlMs);
      for (const outage of outages(ctx)) {
        await outage.run();
        const backAt = Date.now();
        leader = await leaderAgain(observer, candidacies, boundMs);
        assert(leader, `no leader named (with a live term) within ${boundMs} ms after ${outage.what}`);
        console.info(
          `[deadbolt conformance] ${ctx.name}: after ${outage.what}, leader ${leader.election.id} named in ${Date.now() - backAt} ms; ${errors.length} transient error(s) reported so far`,
        );
      }
      // Every follower still campaigns: each resignation hands the term to one of the others.
      const handOffs: number[] = [];
      const campaigning = [...candidacies];
      while (campaigning.length > 1) {
        campaigning.splice(campaigning.indexOf(leader), 1);
        const resignedAt = Date.now();
        await leader.election.resign();
        const next = await leaderAgain(observer, campaigning, HAND_OFF_AFTER_OUTAGE_MS);
        assert(next, `no follower took over within ${HAND_OFF_AFTER_OUTAGE_MS} ms after ${leader.election.id} resigned`);
        handOffs.push(Date.now() - resignedAt);
        leader = next;
      }
      console.info(`[deadbolt conformance] ${ctx.name}: hand-offs after the outages ${handOffs.join(', ')} ms`);
      for (let i = 1; i < yielded.length; i += 1) {
        const [before, after] = [yielded[i - 1]!, yielded[i]!];
        assert(
          after.term > before.term,
          `terms not increasing across the outages: ${before.id} had ${before.term}, then ${after.id} had ${after.term}`,
        );
      }
    } finally {
      await Promise.all(candidacies.map((each) => each.election.resign().catch(() => undefined)));
    }
    await within(Promise.all(candidacies.map((each) => each.loop)), 15_000, 'the loops ending after resign');
    for (const each of candidacies)
      assert(each.settled?.error === undefined, `${each.election.id}'s loop rejected: ${String(each.settled?.error)}`);
  },
};

export const electionOutageCases: readonly ConformanceCase[] = [electionSurvivesRestart];
