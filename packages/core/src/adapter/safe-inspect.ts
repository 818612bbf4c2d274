import { inspect } from 'node:util';

/**
 * Makes instances of `target` print as `summary(instance)` under util.inspect (console.log, any
 * depth, showHidden), JSON.stringify and String(): objects that hold connections hold their
 * credentials too (ioredis keeps `options.password`, pg a pool's `connectionString`), and a
 * `console.log(client)` must never print them. The summary names what is safe: the
 * backend's name, counts, flags.
 */
export function inspectSafely<T extends object>(
  target: abstract new (...args: never[]) => T,
  summary: (instance: T) => Record<string, unknown>,
): void {
  const name = target.name;
  Object.defineProperties(target.prototype, {
    [inspect.custom]: {
      value(this: T, depth: number, options: Parameters<typeof inspect>[1], view: typeof inspect = inspect): string {
        return `${name} ${view(summary(this), { ...options, depth: Math.max(0, depth) })}`;
      },
      configurable: true,
    },
    toJSON: {
      value(this: T): Record<string, unknown> {
        return summary(this);
      },
      configurable: true,
    },
    toString: {
      value(this: T): string {
        return `[${name} ${JSON.stringify(summary(this))}]`;
      },
      configurable: true,
    },
  });
}
