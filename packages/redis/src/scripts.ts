import { existsSync, readFileSync } from 'node:fs';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';

/** Script name -> number of KEYS it takes. The Lua sources live beside this file in scripts/. */
const scriptKeyCounts = {
  'setnx-acquire': 2,
  'set-nx-px': 1,
  'compare-delete': 1,
  'compare-pexpire': 1,
  'hash-acquire': 2,
  'hash-release': 1,
  'hash-renew': 1,
  'getset-acquire': 1,
  'getset-release': 1,
  'getset-renew': 1,
} as const;

export type ScriptName = keyof typeof scriptKeyCounts;
export type ScriptArgument = string | number;

/**
 * Reads a script once, at import. From src/ the file is at ./scripts/; from dist/ it is found in the
 * published src/ tree (the package ships both), so no build step has to copy .lua files.
 */
function readScript(name: ScriptName): string {
  const candidates = [new URL(`./scripts/${name}.lua`, import.meta.url), new URL(`../src/scripts/${name}.lua`, import.meta.url)];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) throw new Error(`@deadbolt/redis: script ${name}.lua is missing from the package`);
  return readFileSync(found, 'utf8');
}

const sources: Readonly<Record<ScriptName, string>> = Object.freeze(
  Object.fromEntries((Object.keys(scriptKeyCounts) as ScriptName[]).map((name) => [name, readScript(name)])) as Record<ScriptName, string>,
);

/** The ioredis command name a script is defined under (prefixed: the connection may be the user's). */
function commandName(name: ScriptName): string {
  return `deadbolt_${name.replace(/-/g, '_')}`;
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
  for (const name of Object.keys(scriptKeyCounts) as ScriptName[]) {
    connection.defineCommand(commandName(name), { numberOfKeys: scriptKeyCounts[name], lua: sources[name] });
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
export function queueScript(pipeline: ChainableCommander, name: ScriptName, keys: readonly string[], args: readonly ScriptArgument[]): void {
  const call = (pipeline as unknown as Record<string, ScriptCall | undefined>)[commandName(name)];
  if (call === undefined) throw new Error(`@deadbolt/redis: script ${name} is not defined on this connection`);
  call.call(pipeline, ...keys, ...args);
}

/** Script replies of the form {1, n} / {0, n}. */
export function pair(reply: unknown): [number, number] {
  if (Array.isArray(reply) && reply.length === 2) return [Number(reply[0]), Number(reply[1])];
  throw new Error(`unexpected script reply ${JSON.stringify(reply)}`);
}
