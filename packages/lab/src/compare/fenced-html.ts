/**
 * The sentence every page carries above its fenced figures: the stale write was refused by the
 * data store, through `@deadbolt/fence`, not by the lock. A lease lock cannot refuse it: by the
 * time the paused holder writes, the lock server has already let it go, and the holder does not know.
 */
import { fencedStoreNames } from './fenced-store.js';
import type { FencedStoreReport } from './history.js';
import { esc } from './html-kit.js';
import type { ScenarioResult } from './scenario-kit.js';

const notTheLock = 'by then the lock server had already let the paused holder go, and the holder did not know';

/** "PostgreSQL, admitFence in the write transaction, for the postgres and zookeeper rows; Redis, ..." */
function storesUsed(results: readonly ScenarioResult[]): string {
  const backends = new Map<FencedStoreReport['kind'], Set<string>>();
  for (const r of results) {
    const kind = r.history.fencedStore?.kind;
    if (kind === undefined) continue;
    if (!backends.has(kind)) backends.set(kind, new Set());
    backends.get(kind)!.add(r.backend);
  }
  return [...backends]
    .map(([kind, names]) => `<b>${esc(fencedStoreNames[kind].long)}</b> for the ${[...names].map(esc).join(' and ')} rows`)
    .join('; ');
}

/** index.html, above the matrix and the figures. */
export function fencedNoteForIndex(results: readonly ScenarioResult[]): string {
  const used = storesUsed(results);
  return `<p class="fenced-note" data-fenced-note><b>Who refused the stale writes: the fenced store, not the lock.</b> The <i>fenced</i> figures are writes to a real data store, a server of its own beside the lock server (a fault on the lock server never reaches it), each write checked by <code>@deadbolt/fence</code>${used ? `: ${used}` : ''}. Where a stale write was refused, that store refused it with <code>StaleFenceError</code>, not the lock: ${notTheLock}. The <i>plain</i> register takes every write: it shows what the overlap costs without the check.</p>`;
}

/** A timeline page, above the timeline. */
export function fencedNoteForTimeline(r: ScenarioResult): string {
  const store = r.history.fencedStore;
  const where = store
    ? `${esc(fencedStoreNames[store.kind].short)} (a data server of its own, apart from the lock server; ${esc(fencedStoreNames[store.kind].long.split(', ')[1] ?? '')} from <code>@deadbolt/fence</code>)`
    : 'a store that checks the fence';
  const fenced = r.history.intervals.some((i) => i.fence !== undefined);
  const tail = fenced
    ? `A red cross in its lane is the store refusing a stale write with <code>StaleFenceError</code>: the store refused it, not the lock (${notTheLock}).`
    : 'This backend gives no fence, so there is nothing for the store to check and its lane stays empty: nothing can refuse the stale write.';
  return `<p class="fenced-note" data-fenced-note><b>The fenced store lane</b> is writes to ${where}. ${tail}</p>`;
}
