import { InvalidArgumentError } from '../../errors.js';
import { describeValue, maxDurationMs, maxOwnerBytes, unsafeText, validateKey } from '../../validation.js';
import type { RunOnceOptions } from '../../api/run-once.js';

const optionNames: ReadonlySet<string> = new Set(['lockAtLeastForMs', 'lockAtMostForMs', 'signal', 'runner']);

/** Everything runOnce checks before any I/O: the name, fn, the durations and their order, the options' names. */
export function validateRunOnce(name: unknown, fn: unknown, options: unknown, backend: string): asserts options is RunOnceOptions {
  validateKey(name, backend);
  const context = { key: name, backend };
  if (typeof fn !== 'function') throw new InvalidArgumentError('fn', `expected a function, got ${describeValue(fn)}`, context);
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError('options', `expected { lockAtLeastForMs, lockAtMostForMs }, got ${describeValue(options)}`, context);
  }
  const record = options as Record<string, unknown>;
  for (const option of Object.keys(record)) {
    if (!optionNames.has(option))
      throw new InvalidArgumentError(`option "${option}"`, `unknown option; the options are ${[...optionNames].join(', ')}`, context);
  }
  checkDuration('lockAtLeastForMs', record.lockAtLeastForMs, 0, context);
  checkDuration('lockAtMostForMs', record.lockAtMostForMs, 1, context);
  if ((record.lockAtLeastForMs as number) > (record.lockAtMostForMs as number)) {
    throw new InvalidArgumentError(
      'lockAtLeastForMs',
      `${record.lockAtLeastForMs} ms is longer than lockAtMostForMs (${record.lockAtMostForMs} ms): the hold cannot outlast its own limit`,
      context,
    );
  }
  if (record.signal !== undefined && !(record.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('signal', `expected an AbortSignal, got ${describeValue(record.signal)}`, context);
  }
  if (record.runner !== undefined) {
    const runner = record.runner;
    const bad =
      typeof runner !== 'string' || runner.length === 0
        ? `expected a non-empty string, got ${describeValue(runner)}`
        : (unsafeText(runner) ?? (Buffer.byteLength(runner, 'utf8') > maxOwnerBytes ? `over ${maxOwnerBytes} bytes` : undefined));
    if (bad !== undefined) throw new InvalidArgumentError('runner', bad, context);
  }
}

function checkDuration(name: string, value: unknown, minimum: number, context: { key: string; backend: string }): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maxDurationMs) {
    const range = minimum === 0 ? 'a non-negative integer' : 'a positive integer';
    throw new InvalidArgumentError(name, `expected ${range} of milliseconds up to ${maxDurationMs}, got ${describeValue(value)}`, context);
  }
}
