import * as kindsLua from './kinds-lua.js';
import { DeadlineWheel, type Watch } from '@deadbolt/core/adapter';
import { Cluster, Command, type ChainableCommander, type Redis } from 'ioredis';
import * as lua from './lua.js';
import { beforeWrite } from './write-bursts.js';

/** Script name -> its Lua source and the number of KEYS it takes. */
const scripts = {
  'setnx-acquire': { keys: 2, lua: lua.setnxAcquireLua },
  'setnx-release': { keys: 2, lua: lua.setnxReleaseLua },
  'mark-waiting': { keys: 2, lua: lua.markWaitingLua },
  'set-nx-px': { keys: 1, lua: lua.setNxPxLua },
  'compare-delete': { keys: 1, lua: lua.compareDeleteLua },
  'compare-pexpire': { keys: 1, lua: lua.comparePexpireLua },
  'hash-acquire': { keys: 2, lua: lua.hashAcquireLua },
  'hash-release': { keys: 2, lua: lua.hashReleaseLua },
  'hash-renew': { keys: 1, lua: lua.hashRenewLua },
  'hash-undo': { keys: 2, lua: lua.hashUndoLua },
  'getset-acquire': { keys: 1, lua: lua.getsetAcquireLua },
  'getset-release': { keys: 1, lua: lua.getsetReleaseLua },
  'getset-renew': { keys: 1, lua: lua.getsetRenewLua },
  'fair-acquire': { keys: 4, lua: lua.fairAcquireLua },
  'fair-release': { keys: 4, lua: lua.fairReleaseLua },
  'fair-leave': { keys: 4, lua: lua.fairLeaveLua },
  'kind-acquire': { keys: 5, lua: kindsLua.kindAcquireLua },
  'kind-release': { keys: 5, lua: kindsLua.kindReleaseLua },
  'kind-leave': { keys: 5, lua: kindsLua.kindLeaveLua },
  'kind-renew': { keys: 5, lua: kindsLua.kindRenewLua },
} as const;

export type ScriptName = keyof typeof scripts;
export type ScriptArgument = string | number;

/** The ioredis command name a script is defined under (prefixed: the connection may be the user's). */
const commandNames = new Map<ScriptName, string>(
  (Object.keys(scripts) as ScriptName[]).map((name) => [name, `deadbolt_${name.replace(/-/g, '_')}`]),
);

/** Looked up, not built: this runs on every call of the hot path (a regex replace per call showed in profiles). */
function commandName(name: ScriptName): string {
  return commandNames.get(name)!;
}

type ScriptCall = (...args: ScriptArgument[]) => Promise<unknown>;

const defined = new WeakSet<Redis | Cluster>();

/**
 * Defines every script on a connection with ioredis `defineCommand`, which runs EVALSHA and falls
 * back to EVAL on NOSCRIPT (after a server restart or SCRIPT FLUSH), also inside pipelines.
 */
export function defineScripts(connection: Redis | Cluster): void {
  if (defined.has(connection)) return;
  for (const name of Object.keys(scripts) as ScriptName[]) {
    connection.defineCommand(commandName(name), { numberOfKeys: scripts[name].keys, lua: scripts[name].lua });
  }
  defined.add(connection);
}

/** A script as runScript sends it: its source, SHA1, KEYS count and the sockets that have it cached. */
interface PreparedScript {
  readonly lua: string;
  readonly sha: string;
  readonly keys: number;
  /** As ioredis' own scripts: the first send on a socket is EVAL (which caches it there), later ones EVALSHA. */
  readonly loadedOn: WeakSet<object>;
}

/** What ioredis' defineCommand keeps per connection (`scriptsSet`): the script a name runs there. */
interface DefinedScript {
  readonly lua: string;
  readonly sha: string;
  readonly numberOfKeys: number | null;
}

/**
 * Prepared per defined script: runScript runs whatever defineCommand defined under the name on that
 * connection (ours, or a test's mutant that redefines one), so both paths always run the same Lua.
 */
const preparedScripts = new WeakMap<DefinedScript, PreparedScript>();

function preparedOn(target: Redis, name: ScriptName): PreparedScript {
  const defined = (target.scriptsSet as Record<string, DefinedScript | undefined>)[commandName(name)];
  if (defined === undefined) throw new Error(`@deadbolt/redis: script ${name} is not defined on this connection`);
  let script = preparedScripts.get(defined);
  if (script === undefined) {
    script = { lua: defined.lua, sha: defined.sha, keys: defined.numberOfKeys ?? scripts[name].keys, loadedOn: new WeakSet<object>() };
    preparedScripts.set(defined, script);
  }
  return script;
}

/** The command deadlines of every connection of this package, on one timer (see ScriptCommand). */
const commandDeadlines = new DeadlineWheel();

/** When each socket a script was written to last received anything (Date.now ms). */
const lastReadAt = new WeakMap<object, number>();
/** Connections whose link is being probed (at most one probe each). */
const probing = new WeakSet<Redis>();

interface ScriptSocket {
  on(event: 'data', listener: () => void): unknown;
  destroy(): void;
}

function isScriptSocket(socket: object): socket is ScriptSocket {
  return typeof (socket as Partial<ScriptSocket>).on === 'function' && typeof (socket as Partial<ScriptSocket>).destroy === 'function';
}

/** Notes, from now on, when `socket` receives anything (once per socket). */
function watchReads(socket: object): void {
  if (lastReadAt.has(socket) || !isScriptSocket(socket)) return;
  lastReadAt.set(socket, Date.now());
  socket.on('data', () => lastReadAt.set(socket, Date.now()));
}

function silentFor(socket: object, ms: number): boolean {
  return Date.now() - (lastReadAt.get(socket) ?? 0) >= ms;
}

/**
 * A script got no answer within its timeout on `socket`, which has received nothing at all for that
 * long. ioredis times the command out but keeps the connection, and every later command goes into
 * the same socket until the kernel gives up on it (minutes: redis/ioredis#634; OpenCTI waited 15
 * minutes after a Kubernetes redeploy, OpenCTI-Platform/opencti#7970). Silence has two causes that
 * must be told apart: a server that is frozen (paused, swapping) runs the commands buffered on that
 * socket when it wakes, so dropping the socket would let an acquire run after its undo, sent on the
 * new connection; a stranded link (a NAT or firewall that forgot it, a restarted container's port
 * forwarder keeping the old one) never delivers them. So a fresh connection asks the server for a
 * PING: if the server answers it while our socket still hears nothing, the link is stranded and the
 * socket is destroyed (ioredis connects again); if not, the server is down or frozen, and nothing
 * changes. The probe ends when it is answered or times out, or when the connection ends.
 */
function dropIfStranded(connection: Redis, socket: object | undefined, ms: number): void {
  if (socket === undefined || !isScriptSocket(socket) || !silentFor(socket, ms) || probing.has(connection)) return;
  probing.add(connection);
  const probe = connection.duplicate({
    lazyConnect: true,
    enableReadyCheck: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    commandTimeout: ms,
    connectTimeout: ms,
  });
  probe.on('error', () => undefined);
  const stop = (): void => probe.disconnect();
  connection.once('end', stop);
  probe
    .ping()
    .then(
      () => {
        if (connection.stream === socket && silentFor(socket, ms)) socket.destroy();
      },
      () => undefined,
    )
    .finally(() => {
      probing.delete(connection);
      connection.off('end', stop);
      probe.disconnect();
    });
}

/**
 * One script call as a prepared command. Two things differ from ioredis' defineCommand scripts:
 * - the commandTimeout runs on the shared deadline wheel instead of a Node timer of its own: ioredis
 *   arms its per-command timer through `setTimeout(ms)` when it sends a command on a connection with
 *   a commandTimeout; here that becomes a wheel watch with the same outcome ("Command timed out"),
 *   cancelled when the command settles;
 * - no closure or extra promise per call for the NOSCRIPT bookkeeping (runScript does it once).
 */
class ScriptCommand extends Command {
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
    const all: string[] = [script.sha, String(script.keys)];
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

/**
 * Runs a script: EVAL the first time on a socket, EVALSHA after, and once more as EVAL when the
 * server answers NOSCRIPT (a restart or SCRIPT FLUSH). The hot path of every lock call: one
 * prepared command, none of ioredis' per-call scripting wrappers, no Node timer per call.
 */
export function runScript(
  target: Redis | Cluster,
  name: ScriptName,
  keys: readonly string[],
  args: readonly ScriptArgument[],
): Promise<unknown> {
  // Cluster keeps ioredis' own script commands (slot routing, redirects and per-node script loading
  // are ioredis' business there): the prepared command is measured and tested on single servers.
  if (target instanceof Cluster) return definedScript(target, name, keys, args);
  const script = preparedOn(target, name);
  const command = new ScriptCommand(script, keys, args, target);
  beforeWrite(target);
  target.sendCommand(command);
  return command.promise.then(undefined, (error: unknown) => {
    if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
    if (command.sentOn !== undefined) script.loadedOn.delete(command.sentOn);
    const again = new ScriptCommand(script, keys, args, target);
    target.sendCommand(again);
    return again.promise;
  });
}

function definedScript(target: Cluster, name: ScriptName, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
  const call = (target as unknown as Record<string, ScriptCall | undefined>)[commandName(name)];
  if (call === undefined) throw new Error(`@deadbolt/redis: script ${name} is not defined on this connection`);
  return call.call(target, ...keys, ...args);
}

/** Queues a script on a pipeline (the returned promise is not used: exec() answers). */
export function queueScript(
  pipeline: ChainableCommander,
  name: ScriptName,
  keys: readonly string[],
  args: readonly ScriptArgument[],
): void {
  const call = (pipeline as unknown as Record<string, ScriptCall | undefined>)[commandName(name)];
  if (call === undefined) throw new Error(`@deadbolt/redis: script ${name} is not defined on this connection`);
  call.call(pipeline, ...keys, ...args);
}

/** Script replies of the form {1, n} / {0, n}. */
export function pair(reply: unknown): [number, number] {
  if (Array.isArray(reply) && reply.length === 2) return [Number(reply[0]), Number(reply[1])];
  throw new Error(`unexpected script reply ${JSON.stringify(reply)}`);
}
