import { DeadlineWheel, type Watch } from '@deadbolt/core/adapter';
import { Command, type Redis } from 'ioredis';
import { dropIfStranded, watchReads } from './stranded-link.js';

/** A script as runScript sends it (lua.ts): its source, SHA1, KEYS count and the sockets that have it cached. */
export interface PreparedScript {
  readonly lua: string;
  readonly sha: string;
  /** undefined: the script takes any number of KEYS (the call's count is sent). */
  readonly keys: number | undefined;
  /** As ioredis' own scripts: the first send on a socket is EVAL (which caches it there), later ones EVALSHA. */
  readonly loadedOn: WeakSet<object>;
}

export type ScriptArgument = string | number;

/** The command deadlines of every connection of this package, on one timer (see ScriptCommand). */
const commandDeadlines = new DeadlineWheel();

/**
 * One script call as a prepared command. Two things differ from ioredis' defineCommand scripts:
 * - the commandTimeout runs on the shared deadline wheel instead of a Node timer of its own: ioredis
 *   arms its per-command timer through `setTimeout(ms)` when it sends a command on a connection with
 *   a commandTimeout; here that becomes a wheel watch with the same outcome ("Command timed out"),
 *   cancelled when the command settles;
 * - no closure or extra promise per call for the NOSCRIPT bookkeeping (runScript does it once).
 */
export class ScriptCommand extends Command {
  private watch: Watch | undefined;
  /** The socket it was last written to: a NOSCRIPT answer means the script is gone there. */
  sentOn: object | undefined;

  constructor(
    private readonly script: PreparedScript,
    keys: readonly string[],
    args: readonly ScriptArgument[],
    /** The connection it is sent on: a silent timeout probes it (dropIfStranded). */
    private readonly connection: Redis,
  ) {
    // The arguments go in after super(), already strings: ioredis' constructor copies them with
    // Array.prototype.flat() and converts numbers one by one, which was half its cost per call.
    super('evalsha', [], { replyEncoding: 'utf8' });
    const all: string[] = [script.sha, String(script.keys ?? keys.length)];
    for (const key of keys) all.push(key);
    for (const arg of args) all.push(typeof arg === 'string' ? arg : String(arg));
    this.args = all;
  }

  override toWritable(socket: object): string | Buffer {
    this.sentOn = socket;
    watchReads(socket);
    if (!this.script.loadedOn.has(socket)) {
      this.script.loadedOn.add(socket);
      this.name = 'eval';
      this.args[0] = this.script.lua;
    } else if (this.name === 'eval') {
      this.name = 'evalsha';
      this.args[0] = this.script.sha;
    }
    return super.toWritable(socket);
  }

  override setTimeout(ms: number): void {
    if (this.watch !== undefined || this.isResolved) return;
    const { resolve, reject } = this;
    const watch = commandDeadlines.watch(ms, () => {
      if (this.isResolved) return;
      reject(new Error('Command timed out'));
      dropIfStranded(this.connection, this.sentOn, ms);
    });
    this.watch = watch;
    this.resolve = (value: unknown) => {
      watch.cancel();
      resolve(value);
    };
    this.reject = (error: Error) => {
      watch.cancel();
      reject(error);
    };
  }
}
