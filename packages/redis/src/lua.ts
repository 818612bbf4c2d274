/**
 * The one script registry: every Lua script this package runs, by name, and the only way to run
 * one (runScript, queueScript). The Lua text lives under lua/, one module per family, compiled into
 * the JavaScript so a bundled app (esbuild, serverless) needs no file from the package at run time.
 */
import { Cluster, type ChainableCommander, type Redis } from 'ioredis';
import * as fair from './lua/fair.js';
import * as getset from './lua/getset.js';
import * as hash from './lua/hash.js';
import * as kinds from './lua/kinds.js';
import * as multiElection from './lua/multi-election.js';
import * as mutex from './lua/mutex.js';
import * as operations from './lua/operations.js';
import * as runs from './lua/runs.js';
import { type PreparedScript, ScriptCommand, type ScriptArgument } from './script-command.js';
import { beforeWrite } from './write-bursts.js';

export type { ScriptArgument } from './script-command.js';

/** Marks a script that takes any number of KEYS (the count goes with each call). */
const anyKeys = 'any';

/** Script name -> its Lua source and the number of KEYS it takes. */
const scripts = {
  'setnx-acquire': { keys: 2, lua: mutex.setnxAcquireLua },
  'setnx-release': { keys: 2, lua: mutex.setnxReleaseLua },
  'mark-waiting': { keys: 2, lua: mutex.markWaitingLua },
  'set-nx-px': { keys: 1, lua: mutex.setNxPxLua },
  'compare-delete': { keys: 1, lua: mutex.compareDeleteLua },
  'compare-pexpire': { keys: 1, lua: mutex.comparePexpireLua },
  'hash-acquire': { keys: 2, lua: hash.hashAcquireLua },
  'hash-release': { keys: 2, lua: hash.hashReleaseLua },
  'hash-renew': { keys: 1, lua: hash.hashRenewLua },
  'hash-undo': { keys: 2, lua: hash.hashUndoLua },
  'getset-acquire': { keys: 1, lua: getset.getsetAcquireLua },
  'getset-release': { keys: 1, lua: getset.getsetReleaseLua },
  'getset-renew': { keys: 1, lua: getset.getsetRenewLua },
  'fair-acquire': { keys: 4, lua: fair.fairAcquireLua },
  'fair-release': { keys: 4, lua: fair.fairReleaseLua },
  'fair-leave': { keys: 4, lua: fair.fairLeaveLua },
  'fair-enqueue-many': { keys: anyKeys, lua: fair.fairEnqueueManyLua },
  'kind-acquire': { keys: 5, lua: kinds.kindAcquireLua },
  'kind-release': { keys: 5, lua: kinds.kindReleaseLua },
  'kind-leave': { keys: 5, lua: kinds.kindLeaveLua },
  'kind-renew': { keys: 5, lua: kinds.kindRenewLua },
  'kind-holds': { keys: 2, lua: kinds.kindHoldsLua },
  'acquire-many': { keys: anyKeys, lua: multiElection.acquireManyLua },
  'elect-acquire': { keys: 3, lua: multiElection.electAcquireLua },
  'elect-leader': { keys: 2, lua: multiElection.electLeaderLua },
  'ops-inspect': { keys: 13, lua: operations.inspectLua },
  'ops-force': { keys: 13, lua: operations.forceReleaseLua },
  'ops-leader': { keys: 3, lua: operations.leaderInfoLua },
  'save-run': { keys: 1, lua: runs.saveRunLua },
} as const satisfies Record<string, { keys: number | typeof anyKeys; lua: string }>;

export type ScriptName = keyof typeof scripts;

/** The ioredis command name a script is defined under (prefixed: the connection may be the user's). */
const commandNames = new Map<ScriptName, string>(
  (Object.keys(scripts) as ScriptName[]).map((name) => [name, `deadbolt_${name.replace(/-/g, '_')}`]),
);

/** Looked up, not built: this runs on every call of the hot path (a regex replace per call showed in profiles). */
function commandName(name: ScriptName): string {
  return commandNames.get(name)!;
}

function keyCount(name: ScriptName): number | undefined {
  const keys = scripts[name].keys;
  return keys === anyKeys ? undefined : keys;
}

type ScriptCall = (...args: ScriptArgument[]) => Promise<unknown>;

const defined = new WeakSet<Redis | Cluster>();

/**
 * Defines every script on a connection with ioredis `defineCommand`, which runs EVALSHA and falls
 * back to EVAL on NOSCRIPT (after a server restart or SCRIPT FLUSH), also inside pipelines. A
 * script of any number of KEYS is defined without numberOfKeys: its calls send the count first.
 */
export function defineScripts(connection: Redis | Cluster): void {
  if (defined.has(connection)) return;
  for (const name of Object.keys(scripts) as ScriptName[]) {
    const keys = keyCount(name);
    connection.defineCommand(
      commandName(name),
      keys === undefined ? { lua: scripts[name].lua } : { numberOfKeys: keys, lua: scripts[name].lua },
    );
  }
  defined.add(connection);
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
    script = { lua: defined.lua, sha: defined.sha, keys: defined.numberOfKeys ?? keyCount(name), loadedOn: new WeakSet<object>() };
    preparedScripts.set(defined, script);
  }
  return script;
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
  if (target instanceof Cluster) return callDefined(target, name, keys, args);
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

/** ioredis' command for `name` on `target`, called with the KEYS count first where the script takes any number. */
function callDefined(target: object, name: ScriptName, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
  const call = (target as Record<string, ScriptCall | undefined>)[commandName(name)];
  if (call === undefined) throw new Error(`@deadbolt/redis: script ${name} is not defined on this connection`);
  return keyCount(name) === undefined ? call.call(target, keys.length, ...keys, ...args) : call.call(target, ...keys, ...args);
}

/** Queues a script on a pipeline (the returned promise is not used: exec() answers). */
export function queueScript(
  pipeline: ChainableCommander,
  name: ScriptName,
  keys: readonly string[],
  args: readonly ScriptArgument[],
): void {
  void callDefined(pipeline, name, keys, args);
}

/** Script replies of the form {1, n} / {0, n}. */
export function pair(reply: unknown): [number, number] {
  if (Array.isArray(reply) && reply.length === 2) return [Number(reply[0]), Number(reply[1])];
  throw new Error(`unexpected script reply ${JSON.stringify(reply)}`);
}
