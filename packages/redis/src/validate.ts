import type { Grant } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { withDeadline } from './deadline.js';
import type { FairKinds } from './modes/fair-kinds.js';
import { kindKeys } from './modes/fair-kinds.js';
import { GetsetMode } from './modes/getset.js';
import { HashReentrantMode } from './modes/hash-reentrant.js';
import type { LockMode } from './modes/mode.js';
import { QuorumUnreachableError, RedlockMode } from './modes/redlock.js';

/**
 * `validate(grant)`: one read, no write, true only while this exact grant holds. Each mode stores
 * its grant its own way, so each is read its own way: setnx and fair (and fair's multi-lock keys and
 * terms) a plain token under the key (GET == token, and the server's PX ends it); hash-reentrant the
 * owner's field in the hash (HEXISTS); getset "expiry:token", the expiry on the client's clock as
 * the algorithm decides it; a fair read, write or permit its holder entry and lease end on the
 * server's clock (a read-only script); RedLock the token on a majority of the masters.
 */
export function validateGrant(
  mode: LockMode,
  kinds: FairKinds | undefined,
  connections: readonly (Redis | Cluster)[],
  now: () => number,
  grant: Grant,
): Promise<boolean> {
  if (mode instanceof RedlockMode) return onMajority(mode, connections, grant);
  const connection = connections[0]!;
  if (kinds?.owns(grant) === true && isKindToken(grant.token)) return holdsKind(connection, grant);
  if (mode instanceof HashReentrantMode) return connection.hexists(grant.key, grant.token).then((reply) => Number(reply) === 1);
  if (mode instanceof GetsetMode) return connection.get(grant.key).then((value) => getsetHolds(value, grant.token, now()));
  return connection.get(grant.key).then((value) => value === grant.token);
}

/** Read, write and permit tokens end "<ttl>.<r|w|p><n>" (fair-kinds.ts); multi-lock ('m') and term ('e') tokens are mutex tokens. */
function isKindToken(token: string): boolean {
  return 'rwp'.includes(token.charAt(token.lastIndexOf('.') + 1));
}

/**
 * A solo hold is meta's 'solo' field (meta expires at its lease end); any other is a member of the
 * holders zset whose score, its lease end in server ms, is still ahead of the server's TIME.
 */
const kindHoldsLua = `local holdersKey, metaKey = KEYS[1], KEYS[2]
if redis.call('HGET', metaKey, 'solo') == ARGV[1] then return 1 end
local score = redis.call('ZSCORE', holdersKey, ARGV[1])
if not score then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if tonumber(score) > now then return 1 end
return 0`;

function holdsKind(connection: Redis | Cluster, grant: Grant): Promise<boolean> {
  const letter = grant.token.charAt(grant.token.lastIndexOf('.') + 1);
  const [holders, meta] = kindKeys(grant.key, letter === 'p' ? 'sem' : 'rw');
  return connection.eval(kindHoldsLua, 2, holders!, meta!, grant.token).then((reply) => Number(reply) === 1);
}

/** getset's value is "<expiry ms>:<token>"; the token is hex, the expiry a client-clock time. */
function getsetHolds(value: string | null, token: string, now: number): boolean {
  if (value === null) return false;
  const colon = value.indexOf(':');
  return value.slice(colon + 1) === token && Number(value.slice(0, colon)) > now;
}

/** The token on a majority of the masters, each asked with the mode's node deadline. Unknown (too few answers): thrown. */
async function onMajority(mode: RedlockMode, masters: readonly (Redis | Cluster)[], grant: Grant): Promise<boolean> {
  const deadlineMs = mode.nodeTimeoutMs(Number.MAX_SAFE_INTEGER);
  const answers = await Promise.allSettled(masters.map((master) => withDeadline(master.get(grant.key), deadlineMs)));
  const answered = answers.filter((answer) => answer.status === 'fulfilled');
  const holding = answered.filter((answer) => answer.value === grant.token).length;
  if (holding >= mode.quorum) return true;
  // The silent masters could make up the majority: the answer is unknown, not no.
  if (holding + masters.length - answered.length >= mode.quorum) {
    const causes = answers.flatMap((answer) => (answer.status === 'rejected' ? [answer.reason] : []));
    throw new QuorumUnreachableError(answered.length, mode.quorum, causes);
  }
  return false;
}
