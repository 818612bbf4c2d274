/**
 * What the fenced store's writes show, beside the stale-write counts: whether the store ended
 * holding the newest holder's value, and whether it ever refused a write no newer fence had
 * preceded. Either going wrong is a fault of the guard or of the harness, never of a lock backend.
 */
import type { History, WriteRecord } from './history.js';

export interface FencedStoreCheck {
  /** Which store the fenced writes went to (absent in hand-made histories). */
  readonly store?: string;
  /**
   * Whether the store's final value and fence are those of the newest holder's last accepted
   * write (0 and no fence when nothing was written); undefined when the history has no store report.
   */
  readonly endsWithNewest: boolean | undefined;
  /** One sentence for the pages: what the store held at the end, and whose write that was. */
  readonly finalText: string;
  /** Writes the store refused although no newer fence had been admitted before them. */
  readonly freshWritesRefused: number;
}

/** The last accepted write among those with the highest fence: what the store must end with. */
function newestWrite(writes: readonly WriteRecord[]): WriteRecord | undefined {
  let newest: WriteRecord | undefined;
  for (const w of writes) if (w.accepted && (newest === undefined || (w.fence ?? -1) >= (newest.fence ?? -1))) newest = w;
  return newest;
}

export function checkFencedStore(history: History): FencedStoreCheck {
  const freshWritesRefused = history.fencedWrites.filter((w) => !w.accepted && !w.stale).length;
  const report = history.fencedStore;
  if (report === undefined) return { endsWithNewest: undefined, finalText: 'not recorded', freshWritesRefused };
  const newest = newestWrite(history.fencedWrites);
  const held = `value ${report.finalValue}, fence ${report.finalFence ?? 'none'}`;
  if (newest === undefined) {
    const empty = report.finalValue === 0 && report.finalFence === undefined;
    return {
      store: report.label,
      endsWithNewest: empty,
      finalText: `${held}: ${empty ? 'never written' : 'yet no write was accepted'}`,
      freshWritesRefused,
    };
  }
  const endsWithNewest = report.finalValue === newest.value && report.finalFence === newest.fence;
  const whose = `${newest.client}'s write of ${newest.value} with fence ${newest.fence}`;
  return {
    store: report.label,
    endsWithNewest,
    finalText: endsWithNewest ? `${held}: the newest holder's (${whose})` : `${held}, NOT the newest holder's (${whose})`,
    freshWritesRefused,
  };
}
