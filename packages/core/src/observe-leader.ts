import type { ElectionDriver } from './contract/drivers.js';
import { BackendUnavailableError, InvalidArgumentError } from './errors.js';
import type { LeaderChange, ObserveOptions } from './operations-types.js';
import { sleep } from './sleep.js';
import { describeValue } from './validation.js';

/** The default interval at which observe() reads the leader. */
export const observeIntervalMs = 250;

/** A backend's leader and term at one moment; `undefined` when there is none. */
export type LeaderReader = () => Promise<{ readonly id: string; readonly term: number | undefined } | undefined>;

export function validateObserveOptions(options: ObserveOptions | undefined, name: string, backend: string): void {
  if (options === undefined) return;
  for (const key of Object.keys(options))
    if (key !== 'signal' && key !== 'intervalMs')
      throw new InvalidArgumentError(`option "${key}"`, 'unknown option; the options are signal, intervalMs', { key: name, backend });
  const { intervalMs } = options;
  if (intervalMs !== undefined && (typeof intervalMs !== 'number' || !Number.isInteger(intervalMs) || intervalMs < 1))
    throw new InvalidArgumentError('intervalMs', `expected a positive integer, got ${describeValue(intervalMs)}`, {
      key: name,
      backend,
    });
}

/**
 * Yields the leader now, then on every change of leader or term, reading it every `intervalMs`
 * (no backend notifies a change of leader to a mere observer yet). Ends, without throwing, when
 * `signal` aborts. A read the server did not answer is tried again at the next interval.
 */
export async function* observeLeader(
  read: LeaderReader,
  options: ObserveOptions | undefined,
  closing: AbortSignal,
): AsyncGenerator<LeaderChange> {
  // The client's close() ends the observation too: its reads could only fail from then on.
  const signal = options?.signal === undefined ? closing : AbortSignal.any([options.signal, closing]);
  const intervalMs = options?.intervalMs ?? observeIntervalMs;
  let last: LeaderChange | undefined;
  const ended = (): boolean => signal.aborted;
  while (!ended()) {
    let now: LeaderChange | undefined;
    try {
      const info = await read();
      now = info === undefined ? { leader: null, term: null } : { leader: info.id, term: info.term ?? null };
    } catch (error) {
      // An outage: nothing changed that we know of. Anything else (an unsupported backend) ends it.
      if (ended()) return;
      if (!(error instanceof BackendUnavailableError)) throw error;
      now = undefined;
    }
    if (ended()) return;
    if (now !== undefined && (last === undefined || now.leader !== last.leader || now.term !== last.term)) {
      last = now;
      yield now;
    }
    try {
      await sleep(intervalMs, signal);
    } catch {
      return;
    }
  }
}

/** The backend's leader with its term (`leaderInfo`), or its id alone (`leader`) where it has no term to give. */
export function leaderReader(election: ElectionDriver, fullKey: string, layout: string | undefined): LeaderReader {
  if (election.leaderInfo) return () => election.leaderInfo!(fullKey);
  return async () => {
    const id = await election.leader(fullKey, layout);
    return id === undefined ? undefined : { id, term: undefined };
  };
}
