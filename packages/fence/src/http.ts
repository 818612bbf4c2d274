import { InvalidArgumentError } from '@deadbolt/core';
import { checkFence } from './validate.js';

/**
 * The request header that carries a writer's fence to an HTTP service, by convention. A service
 * that refuses a stale one answers 409 Conflict (the request conflicts with the resource's state).
 */
export const fenceHeader = 'Deadbolt-Fence';

/**
 * The fence in a header's value (as node:http gives it: a string, an array for a repeated header,
 * or undefined): the decimal digits of a non-negative safe integer, nothing else. Anything else is
 * an InvalidArgumentError (answer 400).
 */
export function parseFenceHeader(value: string | readonly string[] | undefined): number {
  if (value === undefined) throw new InvalidArgumentError(fenceHeader, `the ${fenceHeader} header is missing; send lock.fence in it`);
  if (typeof value !== 'string') throw new InvalidArgumentError(fenceHeader, `expected one ${fenceHeader} header, got ${value.length}`);
  const text = value.trim();
  if (!/^\d{1,16}$/.test(text)) {
    throw new InvalidArgumentError(fenceHeader, `expected the decimal digits of lock.fence, got ${JSON.stringify(text.slice(0, 40))}`);
  }
  const fence = Number(text);
  checkFence(fence);
  return fence;
}
