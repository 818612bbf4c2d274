/**
 * The next fence of a fencing counter, in Lua, for every script that grants (setnx, hash-reentrant,
 * fair and its read-write locks and semaphores, the multi-lock and the election).
 *
 * A counter that INCR creates starts at 1. On a Redis without persistence (or after a failover to a
 * replica that never saw the counter) a restart loses it, and the next grant would get 1 again: a
 * fence lower than one already handed out, which a fenced resource rightly refuses. So when INCR
 * creates the counter (it answers 1: no grant of this key on this server's data set so far), the
 * same script seeds it from the server's clock, TIME in microseconds since the epoch, plus one.
 * Every fence a key's counter hands out after being seeded at t is at most t + (grants since):
 * below the server's clock in microseconds as long as a key gets fewer than one grant per
 * microsecond (Redis runs well under a million scripts a second, on all keys together). So a
 * counter seeded after a restart starts above every fence issued before it, unless the server's
 * clock went back across the restart (its TIME is then older than the last seed).
 * Bound: the microseconds since 1970 stay below Number.MAX_SAFE_INTEGER (2^53 - 1) until the year
 * 2255, so fences stay exact JavaScript numbers until then. A counter that already exists (from
 * before this scheme) keeps counting from where it is; it is seeded on its first loss.
 * The hot path is unchanged: one INCR and one comparison; TIME and INCRBY run only when the counter
 * is created. Scripts that read TIME before writing on Redis < 5 need redis.replicate_commands()
 * first (fenceScriptPrologueLua), so replicas store the seed the primary computed.
 */

/** First line of a script that may seed a counter: TIME before writes needs effects replication on Redis < 5. */
export const fenceScriptPrologueLua = `if redis.replicate_commands then redis.replicate_commands() end -- a seed reads TIME (Redis < 5)
`;

/**
 * Lua statements that set the local `variable` to the next fence of the counter `keyExpression`
 * (a Lua expression). Inline, not a function: a closure per script call costs on the hot path.
 * TIME answers seconds and microseconds as strings: the seed is built as text, as a Lua number
 * would print with 14 significant digits.
 */
export function nextFenceLua(variable: string, keyExpression: string): string {
  return `local ${variable} = redis.call('INCR', ${keyExpression})
if ${variable} == 1 then
  local seedTime = redis.call('TIME')
  ${variable} = redis.call('INCRBY', ${keyExpression}, seedTime[1] .. string.sub('00000' .. seedTime[2], -6))
end
`;
}

/** A fence as text for a message: Lua's own number-to-text keeps 14 digits, a seeded fence has 16. */
export function fenceTextLua(expression: string): string {
  return `string.format('%d', ${expression})`;
}
