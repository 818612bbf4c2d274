/**
 * Functions of the previous release that this one replaced with a `_v2` (sql.ts, kinds-sql.ts),
 * created here verbatim so that clients of that release keep working beside this one on a database
 * this release set up (they probe for their last function, find it, and would otherwise call a
 * missing `_v1`). This release never calls them. Names as in sql.ts / kinds-sql.ts; each returns
 * [name, argument types, CREATE FUNCTION text] for createOnce.
 */
export function legacyLeaseFunction(names: {
  readonly L: string;
  readonly W: string;
  readonly seq: string;
  readonly wseq: string;
  readonly lockRow: string;
  readonly grantNext: string;
  readonly acquire: string;
}): [string, string, string] {
  const { L, W, seq, wseq, lockRow, grantNext, acquire: name } = names;
  const acquire = `CREATE FUNCTION ${name}(k text, tok text, ttl_ms float8, do_join boolean, chan text, lease_ms float8,
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
  SELECT * INTO r FROM ${lockRow}(k);
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
  END IF;
  fence := NULL;
  IF do_join THEN
    INSERT INTO ${W} (token, key, seq, channel, ttl_ms, deadline)
      VALUES (tok, k, nextval('${wseq}'), chan, ttl_ms, now() + lease_ms * interval '1 millisecond')
      ON CONFLICT (token) DO UPDATE SET deadline = EXCLUDED.deadline;
  END IF;
  SELECT greatest(0, ceil(extract(epoch FROM l.expires_at - clock_timestamp()) * 1000)) INTO remaining_ms
    FROM ${L} l WHERE l.key = k;
END $fn$`;
  return [name, '(text, text, float8, boolean, text, float8)', acquire];
}

export function legacyKindFunction(names: {
  readonly G: string;
  readonly H: string;
  readonly KW: string;
  readonly seq: string;
  readonly wseq: string;
  readonly krow: string;
  readonly kfits: string;
  readonly kgrant: string;
  readonly kacquire: string;
}): [string, string, string] {
  const { G, H, KW, seq, wseq, krow, kfits, kgrant, kacquire } = names;
  const body = `CREATE FUNCTION ${kacquire}(k text, tok text, want text, want_permits integer, downgrade_of text, ttl float8,
  do_join boolean, chan text, lease float8, OUT held boolean, OUT fence bigint, OUT remaining_ms float8) LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  held := false;
  PERFORM ${krow}(k);
  DELETE FROM ${H} WHERE key = k AND expires_at < clock_timestamp();
  PERFORM ${kgrant}(k);
  UPDATE ${H} SET expires_at = now() + ttl * interval '1 millisecond' WHERE token = tok AND key = k RETURNING ${H}.fence INTO fence;
  IF FOUND THEN
    -- Granted to us (now, or earlier by a release whose message we have not seen): extended to the ttl.
    DELETE FROM ${KW} WHERE token = tok;
    held := true; RETURN;
  END IF;
  IF (downgrade_of IS NOT NULL AND want = 'read' AND ${kfits}(k, want, want_permits, downgrade_of))
     OR (NOT EXISTS (SELECT 1 FROM ${KW} WHERE key = k AND token <> tok) AND ${kfits}(k, want, want_permits, NULL)) THEN
    fence := nextval('${seq}');
    INSERT INTO ${H} (token, key, kind, fence, expires_at) VALUES (tok, k, want, fence, now() + ttl * interval '1 millisecond');
    DELETE FROM ${KW} WHERE token = tok;
    held := true; RETURN;
  END IF;
  fence := NULL;
  IF do_join THEN
    INSERT INTO ${KW} (token, key, seq, kind, permits, channel, ttl_ms, deadline)
      VALUES (tok, k, nextval('${wseq}'), want, want_permits, chan, ttl, now() + lease * interval '1 millisecond')
      ON CONFLICT (token) DO UPDATE SET deadline = EXCLUDED.deadline;
  END IF;
  SELECT greatest(0, ceil(extract(epoch FROM min(h.expires_at) - clock_timestamp()) * 1000)) INTO remaining_ms
    FROM ${H} h WHERE h.key = k AND h.expires_at >= clock_timestamp();
  IF NOT EXISTS (SELECT 1 FROM ${H} WHERE key = k) AND NOT EXISTS (SELECT 1 FROM ${KW} WHERE key = k) THEN
    DELETE FROM ${G} WHERE key = k;
  END IF;
END $fn$`;
  return [kacquire, '(text, text, text, integer, text, float8, boolean, text, float8)', body];
}
