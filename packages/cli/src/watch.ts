import type { LockClient, LockInspection } from '@deadbolt/core';
import { exitCodes } from './exit-codes.js';
import { watchHelp, watchUsage } from './help.js';
import { inspectionLines, stateOf } from './inspection-text.js';
import { parseWatchArgs } from './operator-args.js';
import { withOperatorClient } from './operator-client.js';
import type { Io, Output } from './output.js';
import { SignalRelay } from './signal-relay.js';

/**
 * `deadbolt watch <key...>`: inspects the keys every --interval ms until interrupted. On a terminal
 * the table is redrawn in place; otherwise (a pipe, a log) a line `<ISO time>  <key>  held|free ...`
 * is printed when a key's holds change (a new holder, fence, kind or waiter count; not its ttl).
 */
export async function watchCommand(argv: readonly string[], io: Io, output: Output): Promise<number> {
  const args = parseWatchArgs(argv);
  if (args.help) {
    output.help(watchHelp);
    return exitCodes.ok;
  }
  const signals = new SignalRelay();
  try {
    return await withOperatorClient(args.url, io, output, watchUsage, async (client) => {
      const draw = io.stdout.isTTY === true ? redrawer(io) : printer(output);
      while (!signals.signal.aborted) {
        const seen = await inspectAll(client, args.keys);
        if (signals.signal.aborted) break;
        draw(seen);
        await pause(args.intervalMs, signals.signal);
      }
      return exitCodes.ok;
    });
  } finally {
    signals[Symbol.dispose]();
  }
}

function inspectAll(client: LockClient, keys: readonly string[]): Promise<LockInspection[]> {
  return Promise.all(keys.map((key) => client.inspect(key)));
}

/** Plain output: one line per change of a key's holds. */
function printer(output: Output): (seen: readonly LockInspection[]) => void {
  const last = new Map<string, string>();
  return (seen) => {
    for (const one of seen) {
      const state = stateOf(one);
      if (last.get(one.key) === state) continue;
      last.set(one.key, state);
      const [head, ...holds] = inspectionLines(one);
      output.data([new Date().toISOString(), head, ...holds.map((hold) => hold.trim())].join('  '));
    }
  };
}

/** A terminal: the whole table again, over the previous one (cursor up, clear to the end of the screen). */
function redrawer(io: Io): (seen: readonly LockInspection[]) => void {
  let drawn = 0;
  return (seen) => {
    const lines = [`deadbolt watch  ${new Date().toISOString()}`, ...seen.flatMap(inspectionLines)];
    io.stdout.write(`${drawn > 0 ? `\u001b[${drawn}A` : ''}\u001b[0J${lines.join('\n')}\n`);
    drawn = lines.length;
  };
}

function pause(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      stop.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop.addEventListener('abort', done, { once: true });
  });
}
