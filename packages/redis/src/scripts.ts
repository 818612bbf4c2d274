import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import * as kindsLua from './kinds-lua.js';
import * as lua from './lua.js';

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
type Target = Redis | Cluster | ChainableCommander;

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

/** Runs a script (or queues it, on a pipeline). `keys` then `args`, as EVALSHA takes them. */
export function runScript(target: Target, name: ScriptName, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
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
