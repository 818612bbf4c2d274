import { createIndexOnce, createOnce } from '../../ddl.js';
import { legacyLeaseFunction } from './legacy-sql.js';

/**
 * The lease mode's SQL: a FIFO queue on the server with the hand-off done in place (primitives.md
 * section 1.3, the Redis fair mode's design, here in plpgsql). Every check-and-act is one function
 * call (one statement, one transaction), judged by the server's clock, so client clock skew cannot
 * break exclusion. Fences come from a sequence: globally increasing, hence strictly increasing per
 * key, and they survive a release deleting the row.
 *
 * Serialisation: every function that looks at a key's queue first locks the key's lock row
 * (SELECT ... FOR UPDATE, inserting a free placeholder row when there is none), so operations on one
 * key run one after another, as Redis runs scripts; locks are always taken lock row first, then
 * waiter rows, so they cannot deadlock. Invariant: a key with no lock row has no waiter rows (a
 * waiter joins only behind a live holder, and the row is deleted only when nobody waits).
 *
 * Grants: a release, a give-up, or any call that finds the lock free hands it to the first LIVE
 * waiter (server-clock deadline not passed; dead ones are purged on the way) by rewriting the lock
 * row in place, with a new fence and a claim of min(its ttl, its waiter deadline), and NOTIFYs that
 * waiter's client on its own channel. The waiter's client extends the claim to the full ttl.
 * Correctness never depends on the notification: a waiter re-checks when the holder's lease ends and
 * on every heartbeat, and finds its own token in the lock row.
 *
 * `table` and `schema` are validated identifiers (options.ts), quoted here.
 */
export function leaseSql(table: string, schema?: string) {
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  const L = `${qualifier}"${table}"`;
  const seq = `${qualifier}"${table.slice(0, 56)}_fence"`;
  const W = `${qualifier}"${table.slice(0, 55)}_waiters"`;
  const wseq = `${qualifier}"${table.slice(0, 56)}_wseq"`;
  const leaders = `${qualifier}"${table.slice(0, 55)}_leaders"`;
  // The read-write lock and semaphore tables (kinds-sql.ts): renewals and heartbeats cover them too.
  const H = `${qualifier}"${table.slice(0, 55)}_holders"`;
  const KW = `${qualifier}"${table.slice(0, 54)}_kwaiters"`;
  // Versioned names: a later version adds new functions beside these instead of replacing them
  // under clients that still call the old ones.
  const fn = (name: string): string => `${qualifier}"${table.slice(0, 44)}_${name}_v1"`;
  const grantNext = fn('grant');
  const lockRow = fn('row');
  // v2: the key's row locked inline (v1 called the row function: a plpgsql frame and an SPI call
  // more inside the key's serial section, ~0.1 ms per call) and the holder's remaining lease read
  // from that locked row. v1 stays for clients of the previous release.
  const acquire = fn('acquire').replace(/_v1"$/, '_v2"');
  const release = fn('release');
  // v2: the grant inline (v1 calls the grant function: a plpgsql frame more in the key's serial
  // section) and the message it sent returned to the caller (see releaseSqlV2). v1 stays for clients
  // of the previous release.
  const releaseV2 = fn('release').replace(/_v1"$/, '_v2"');
  const leave = fn('leave');
  const grantNextSql = `CREATE FUNCTION ${grantNext}(k text) RETURNS boolean LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
-- The caller holds k's lock row, which is free: hand it to the first live waiter. True when one got it.
DECLARE w record; f bigint;
BEGIN
  LOOP
    SELECT token, channel, ttl_ms, deadline INTO w FROM ${W} WHERE key = k ORDER BY seq LIMIT 1;
    IF NOT FOUND THEN RETURN false; END IF;
    DELETE FROM ${W} WHERE token = w.token;
    EXIT WHEN w.deadline >= clock_timestamp();
  END LOOP;
  f := nextval('${seq}');
  UPDATE ${L} SET owner = w.token, fence = f,
    expires_at = least(clock_timestamp() + w.ttl_ms * interval '1 millisecond', w.deadline)
    WHERE key = k;
  PERFORM pg_notify(w.channel, w.token || ' ' || f);
  RETURN true;
END $fn$`;
  const lockRowSql = `CREATE FUNCTION ${lockRow}(k text, OUT owner text, OUT fence bigint, OUT expires_at timestamptz)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
-- Locks k's lock row, inserting a free placeholder ('' until -infinity) when there is none.
BEGIN
  LOOP
    SELECT l.owner, l.fence, l.expires_at INTO owner, fence, expires_at FROM ${L} l WHERE l.key = k FOR UPDATE;
    IF FOUND THEN RETURN; END IF;
    INSERT INTO ${L} (key, owner, fence, expires_at) VALUES (k, '', 0, '-infinity') ON CONFLICT (key) DO NOTHING;
  END LOOP;
END $fn$`;
  const acquireSql = `CREATE FUNCTION ${acquire}(k text, tok text, ttl_ms float8, do_join boolean, chan text, lease_ms float8,
  OUT held boolean, OUT fence bigint, OUT remaining_ms float8) LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
-- Takes a free lock (never past a live waiter), finds a grant already made to tok (extending it to
-- ttl), or reports the holder's remaining lease; with do_join, queues tok (or refreshes its deadline).
DECLARE r record; head_token text; head_deadline timestamptz;
BEGIN
  held := false;
  -- The common case, a free key with no row: insert ours (nobody can be queued: the invariant).
  INSERT INTO ${L} AS l (key, owner, fence, expires_at)
    VALUES (k, tok, nextval('${seq}'), now() + ttl_ms * interval '1 millisecond')
    ON CONFLICT (key) DO NOTHING RETURNING l.fence INTO fence;
  IF FOUND THEN
    IF NOT EXISTS (SELECT 1 FROM ${W} WHERE key = k) THEN held := true; RETURN; END IF;
    UPDATE ${L} SET owner = '', expires_at = '-infinity' WHERE key = k; -- never barge: queue first
  END IF;
  LOOP
    SELECT l.owner, l.fence, l.expires_at INTO r FROM ${L} l WHERE l.key = k FOR UPDATE;
    EXIT WHEN FOUND;
    INSERT INTO ${L} (key, owner, fence, expires_at) VALUES (k, '', 0, '-infinity') ON CONFLICT (key) DO NOTHING;
  END LOOP;
  IF r.owner = tok THEN
    -- Granted to us already (a message we missed or that is on its way): extend to the full ttl.
    UPDATE ${L} SET expires_at = now() + ttl_ms * interval '1 millisecond' WHERE key = k;
    DELETE FROM ${W} WHERE token = tok;
    held := true; fence := r.fence; RETURN;
  END IF;
  IF r.expires_at < now() THEN
    -- Free (released with nobody queued, or its holder's lease ran out): the first live waiter's.
    LOOP
      head_token := NULL;
      SELECT token, deadline INTO head_token, head_deadline FROM ${W} WHERE key = k ORDER BY seq LIMIT 1;
      EXIT WHEN head_token IS NULL OR head_token = tok OR head_deadline >= clock_timestamp();
      DELETE FROM ${W} WHERE token = head_token;
    END LOOP;
    IF head_token IS NULL OR head_token = tok THEN
      UPDATE ${L} SET owner = tok, fence = nextval('${seq}'), expires_at = now() + ttl_ms * interval '1 millisecond'
        WHERE key = k RETURNING ${L}.fence INTO fence;
      DELETE FROM ${W} WHERE token = tok;
      held := true; RETURN;
    END IF;
    PERFORM ${grantNext}(k);
    SELECT l.expires_at INTO r.expires_at FROM ${L} l WHERE l.key = k; -- the waiter's it was granted to
  END IF;
  fence := NULL;
  IF do_join THEN
    INSERT INTO ${W} (token, key, seq, channel, ttl_ms, deadline)
      VALUES (tok, k, nextval('${wseq}'), chan, ttl_ms, now() + lease_ms * interval '1 millisecond')
      ON CONFLICT (token) DO UPDATE SET deadline = EXCLUDED.deadline;
  END IF;
  -- (-infinity: a placeholder left free, so the caller re-checks at once)
  remaining_ms := CASE WHEN isfinite(r.expires_at) THEN greatest(0, ceil(extract(epoch FROM r.expires_at - clock_timestamp()) * 1000)) ELSE 0 END;
END $fn$`;
  const releaseSql = `CREATE FUNCTION ${release}(k text, tok text) RETURNS boolean LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
-- Only our own row: hand the lock to the next live waiter in place, or delete it. True when our
-- lease was still live. A retried release (lost reply) finds the next owner's token: touches nothing.
DECLARE r record; live boolean;
BEGIN
  SELECT l.owner, l.expires_at INTO r FROM ${L} l WHERE l.key = k FOR UPDATE;
  IF NOT FOUND OR r.owner <> tok THEN RETURN false; END IF;
  live := r.expires_at >= now();
  IF NOT ${grantNext}(k) THEN
    DELETE FROM ${L} WHERE key = k;
    -- Election followers (election.ts) wait for this; lock waiters get their grant instead.
    IF EXISTS (SELECT 1 FROM ${leaders} WHERE key = k) THEN PERFORM pg_notify('${releaseChannel}', k); END IF;
  END IF;
  RETURN live;
END $fn$`;
  const releaseSqlV2 = `CREATE FUNCTION ${releaseV2}(k text, tok text, OUT live boolean, OUT granted_channel text, OUT granted_payload text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
-- v1 (only our own row; hand it to the next live waiter in place, or delete it), plus the channel
-- and message of the grant it made: a waiter in the caller's process gets its grant from the reply
-- instead of waiting for the NOTIFY to come round through the listening session.
DECLARE r record; w record; f bigint;
BEGIN
  live := false;
  SELECT l.owner, l.expires_at INTO r FROM ${L} l WHERE l.key = k FOR UPDATE;
  IF NOT FOUND OR r.owner <> tok THEN RETURN; END IF;
  live := r.expires_at >= now();
  LOOP
    SELECT token, channel, ttl_ms, deadline INTO w FROM ${W} WHERE key = k ORDER BY seq LIMIT 1;
    IF NOT FOUND THEN
      DELETE FROM ${L} WHERE key = k;
      -- Election followers (election.ts) wait for this; lock waiters get their grant instead.
      IF EXISTS (SELECT 1 FROM ${leaders} WHERE key = k) THEN PERFORM pg_notify('${releaseChannel}', k); END IF;
      RETURN;
    END IF;
    DELETE FROM ${W} WHERE token = w.token;
    EXIT WHEN w.deadline >= clock_timestamp();
  END LOOP;
  f := nextval('${seq}');
  UPDATE ${L} SET owner = w.token, fence = f,
    expires_at = least(clock_timestamp() + w.ttl_ms * interval '1 millisecond', w.deadline)
    WHERE key = k;
  granted_channel := w.channel;
  granted_payload := w.token || ' ' || f;
  PERFORM pg_notify(granted_channel, granted_payload);
END $fn$`;
  const leaveSql = `CREATE FUNCTION ${leave}(k text, tok text) RETURNS integer LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
-- A waiter gives up (timeout, abort): no entry left behind. A grant that raced the give-up is passed
-- on as a release would; a free lock goes to the next live waiter (progress never waits for a timer).
-- 2: the lock had been granted to tok (now passed on); 1 otherwise.
DECLARE r record;
BEGIN
  SELECT * INTO r FROM ${lockRow}(k);
  DELETE FROM ${W} WHERE token = tok;
  IF r.owner = tok OR r.expires_at < now() THEN
    IF NOT ${grantNext}(k) THEN DELETE FROM ${L} WHERE key = k; END IF;
  END IF;
  IF r.owner = tok THEN RETURN 2; END IF;
  RETURN 1;
END $fn$`;
  return {
    schema: [
      ...(schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS "${schema}"`]),
      `CREATE TABLE IF NOT EXISTS ${L} (key text PRIMARY KEY, owner text NOT NULL, fence bigint NOT NULL, expires_at timestamptz NOT NULL)`,
      `CREATE SEQUENCE IF NOT EXISTS ${seq}`,
      `CREATE TABLE IF NOT EXISTS ${W} (token text PRIMARY KEY, key text NOT NULL, seq bigint NOT NULL, channel text NOT NULL, ttl_ms float8 NOT NULL, deadline timestamptz NOT NULL)`,
      createIndexOnce(`${qualifier}"${table.slice(0, 52)}_waiters_q"`, `ON ${W} (key, seq)`),
      `CREATE SEQUENCE IF NOT EXISTS ${wseq}`,
      `CREATE TABLE IF NOT EXISTS ${leaders} (key text PRIMARY KEY, token text NOT NULL, id text NOT NULL)`,
      // Each function once, under a transaction lock so that concurrent first clients do not race.
      ...[
        [lockRow, '(text)', lockRowSql],
        [grantNext, '(text)', grantNextSql],
        [release, '(text, text)', releaseSql],
        [leave, '(text, text)', leaveSql],
      ].map(([name, args, body]) => createOnce(name!, args!, body!)),
      createOnce(...legacyLeaseFunction({ L, W, seq, wseq, lockRow, grantNext, acquire: fn('acquire') })),
      createOnce(acquire, '(text, text, float8, boolean, text, float8)', acquireSql),
      createOnce(releaseV2, '(text, text)', releaseSqlV2),
    ],
    /** The last function the schema creates: once it exists, the whole schema does. */
    probe: `${releaseV2}(text, text)`,
    /** One attempt: $1 key, $2 token, $3 ttl ms, $4 join the queue, $5 our grant channel, $6 waiter lease ms. */
    acquire: `SELECT held, fence::text AS fence, remaining_ms FROM ${acquire}($1, $2, $3, $4, $5, $6)`,
    renew: `UPDATE ${L} SET expires_at = now() + $3 * interval '1 millisecond' WHERE key = $1 AND owner = $2 AND expires_at >= now()`,
    /** Mutex rows and read/write/permit holders alike (tokens are random: a token matches in one table at most). */
    renewMany: `WITH u AS (SELECT * FROM unnest($1::text[], $2::text[], $3::float8[]) AS u(key, owner, ttl)),
      locks AS (UPDATE ${L} AS l SET expires_at = now() + u.ttl * interval '1 millisecond' FROM u
        WHERE l.key = u.key AND l.owner = u.owner AND l.expires_at >= now() RETURNING l.key, l.owner),
      holds AS (UPDATE ${H} AS h SET expires_at = now() + u.ttl * interval '1 millisecond' FROM u
        WHERE h.key = u.key AND h.token = u.owner AND h.expires_at >= now() RETURNING h.key, h.token AS owner)
      SELECT key, owner FROM locks UNION ALL SELECT key, owner FROM holds`,
    /** $1 key, $2 our token. The grant it made, if any: the waiter's channel and the message sent there. */
    release: `SELECT live, granted_channel, granted_payload FROM ${releaseV2}($1, $2)`,
    leave: `SELECT ${leave}($1, $2) AS left`,
    /**
     * Waiters' heartbeat, one statement per tick ($1 tokens, $2 their keys, $3 waiter lease ms): their
     * deadlines move on; per token, whether it is still queued (not: granted, or purged as dead) and
     * the holder's remaining lease (<= 0 or null: free, so the waiter re-checks at once). A read,
     * write or permit waiter gets 0 while any holder row of its key has expired: only a call on the
     * key purges it, and it may be a grant made to a dead waiter ahead (a claim that ends with that
     * waiter's lease) while the other holders renew for hours; the re-check purges it and grants on.
     */
    heartbeat: `WITH beat AS (
        UPDATE ${W} SET deadline = now() + $3 * interval '1 millisecond' WHERE token = ANY($1::text[]) RETURNING token),
      kbeat AS (
        UPDATE ${KW} SET deadline = now() + $3 * interval '1 millisecond' WHERE token = ANY($1::text[]) RETURNING token)
      SELECT t.token, (beat.token IS NOT NULL OR kbeat.token IS NOT NULL) AS queued,
             (CASE WHEN kbeat.token IS NOT NULL
               THEN (SELECT CASE WHEN bool_or(h.expires_at < clock_timestamp()) THEN 0
                       ELSE ceil(extract(epoch FROM min(h.expires_at) - clock_timestamp()) * 1000) END
                     FROM ${H} h WHERE h.key = t.key)
               ELSE (SELECT ceil(extract(epoch FROM l.expires_at - clock_timestamp()) * 1000) FROM ${L} l WHERE l.key = t.key)
             END)::float8 AS remaining_ms
      FROM unnest($1::text[], $2::text[]) AS t(token, key)
      LEFT JOIN beat ON beat.token = t.token LEFT JOIN kbeat ON kbeat.token = t.token`,
    /** Is the lock free now (no row, or expired)? Used after LISTEN so a release is never missed. */
    isFree: `SELECT NOT EXISTS (SELECT 1 FROM ${L} WHERE key = $1 AND expires_at >= now()) AS free`,
  };
}

/** The LISTEN/NOTIFY channel a release wakes (election followers); the payload is the key. */
export const releaseChannel = 'deadbolt_released';
