import { InvalidArgumentError } from '@deadbolt/core';

/** How long a tick's claim holds the job's name (ShedLock's two bounds). */
export interface TickOptions {
  /**
   * The name stays taken until the tick's scheduled time plus this (ms, integer > 0), however fast
   * the job ends. Cover the replicas' clock skew plus the scheduler's jitter; keep it shorter than
   * the interval between ticks minus that skew, or the next tick finds the name still taken.
   */
  readonly lockAtLeastForMs: number;
  /** The longest the name stays taken (ms, integer >= lockAtLeastForMs): a crashed winner frees it then. */
  readonly lockAtMostForMs: number;
  /** Called when this replica skips a tick: another replica ran it, or it came too late to claim safely. */
  readonly onSkip?: (skip: TickSkip) => void;
}

/** Why a replica did not run a tick. */
export interface TickSkip {
  readonly name: string;
  readonly scheduledAt: Date;
  /** 'taken': another replica holds the name. 'late': this replica got to the tick after lockAtLeastForMs. */
  readonly reason: 'taken' | 'late';
}

const names: ReadonlySet<string> = new Set(['lockAtLeastForMs', 'lockAtMostForMs', 'onSkip']);

/** Checks the job's name and the options when the integration is built, before any tick or I/O. */
export function validateTick(name: unknown, fn: unknown, options: unknown): asserts options is TickOptions {
  const context = { key: typeof name === 'string' ? name : String(name), backend: 'schedule' };
  if (typeof name !== 'string' || name.length === 0)
    throw new InvalidArgumentError('name', `expected a non-empty string, got ${show(name)}`, context);
  if (typeof fn !== 'function') throw new InvalidArgumentError('fn', `expected a function, got ${show(fn)}`, context);
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError('options', `expected { lockAtLeastForMs, lockAtMostForMs }, got ${show(options)}`, context);
  }
  const record = options as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!names.has(key))
      throw new InvalidArgumentError(`option "${key}"`, `unknown option; the options are ${[...names].join(', ')}`, context);
  }
  const least = record.lockAtLeastForMs;
  const most = record.lockAtMostForMs;
  // 0 is refused here (runOnce takes it): with no hold, any replica that fires the tick late runs it again.
  if (!isPositiveInteger(least))
    throw new InvalidArgumentError('lockAtLeastForMs', `expected a positive integer of milliseconds, got ${show(least)}`, context);
  if (!isPositiveInteger(most))
    throw new InvalidArgumentError('lockAtMostForMs', `expected a positive integer of milliseconds, got ${show(most)}`, context);
  if (least > most) {
    throw new InvalidArgumentError('lockAtLeastForMs', `${least} ms is longer than lockAtMostForMs (${most} ms)`, context);
  }
  if (record.onSkip !== undefined && typeof record.onSkip !== 'function') {
    throw new InvalidArgumentError('onSkip', `expected a function, got ${show(record.onSkip)}`, context);
  }
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function show(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeof value;
}
