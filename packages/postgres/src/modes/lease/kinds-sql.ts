import { addColumnOnce, createIndexOnce, createOnce } from '../../ddl.js';
import { legacyKindFunction } from './legacy-sql.js';

/**
 * Read-write locks and semaphores in lease mode (issue 16), on the same design as the mutex queue
 * (sql.ts): holders are rows with a server-clock expiry in `<table>_holders` (token, key, kind,
 * fence, expires_at), waiters queue FIFO in `<table>_kwaiters` with their kind and permits, and
 * every call on a key first locks the key's row in `<table>_kinds` (created while the key has
 * holders or waiters), so calls on one key run one after another. Room: a writer when nobody
 * holds, a reader when no writer holds (or the writer is the one it downgrades), a permit while
 * fewer than `permits` hold. Grants go in queue order to every head that fits (so a run of readers
 * is admitted together and a writer is never overtaken by later readers), in place, with a claim of
 * min(ttl, waiter deadline) and one pg_notify to the waiter's client; expired holders are purged
 * by any call on the key. Fences: the mutex's sequence (strictly increasing across all grants).
 */
export function kindsSql(table: string, schema?: string) {
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  const seq = `${qualifier}"${table.slice(0, 56)}_fence"`;
  const wseq = `${qualifier}"${table.slice(0, 56)}_wseq"`;
  const G = `${qualifier}"${table.slice(0, 57)}_kinds"`;
  const H = `${qualifier}"${table.slice(0, 55)}_holders"`;
  const KW = `${qualifier}"${table.slice(0, 54)}_kwaiters"`;
  const fn = (name: string, version = 1): string => `${qualifier}"${table.slice(0, 44)}_${name}_v${version}"`;
  // kacquire v2 records and checks a semaphore's permits (it answers one more column); v1 callers keep theirs.
  const [krow, kfits, kgrant, kacquire, krelease, kleave] = [
    fn('krow'),
    fn('kfits'),
    fn('kgrant'),
    fn('kacquire', 2),
    fn('krelease'),
    fn('kleave'),
  ];
  const live = (alias: string) => `${alias}.key = k AND ${alias}.expires_at >= clock_timestamp()`;
  const tidy = `DELETE FROM ${H} WHERE key = k AND expires_at < clock_timestamp();
  PERFORM ${kgrant}(k);
  IF NOT EXISTS (SELECT 1 FROM ${H} WHERE key = k) AND NOT EXISTS (SELECT 1 FROM ${KW} WHERE key = k) THEN
    DELETE FROM ${G} WHERE key = k;
  END IF;`;
  const functions: [string, string, string][] = [
    [
      krow,
      '(text)',
      `CREATE FUNCTION ${krow}(k text) RETURNS void LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  LOOP
    PERFORM 1 FROM ${G} WHERE key = k FOR UPDATE;
    IF FOUND THEN RETURN; END IF;
    INSERT INTO ${G} (key) VALUES (k) ON CONFLICT (key) DO NOTHING;
  END LOOP;
END $fn$`,
    ],
    [
      kfits,
      '(text, text, integer, text)',
      `CREATE FUNCTION ${kfits}(k text, kind text, permits integer, downgrade_of text) RETURNS boolean LANGUAGE plpgsql AS $fn$
#variable_conflict use_variable
BEGIN
  IF kind = 'write' THEN RETURN NOT EXISTS (SELECT 1 FROM ${H} h WHERE ${live('h')}); END IF;
  IF kind = 'read' THEN
    RETURN NOT EXISTS (SELECT 1 FROM ${H} h WHERE ${live('h')} AND h.kind = 'write' AND h.token <> coalesce(downgrade_of, ''));
  END IF;
  RETURN (SELECT count(*) FROM ${H} h WHERE ${live('h')}) < permits;
END $fn$`,
    ],
    [
      kgrant,
      '(text)',
      `CREATE FUNCTION ${kgrant}(k text) RETURNS void LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE w record; f bigint;
BEGIN
  LOOP
    SELECT token, kind, permits, channel, ttl_ms, deadline INTO w FROM ${KW} WHERE key = k ORDER BY seq LIMIT 1;
    IF NOT FOUND THEN RETURN; END IF;
    IF w.deadline < clock_timestamp() THEN
      DELETE FROM ${KW} WHERE token = w.token;
      CONTINUE;
    END IF;
    IF NOT ${kfits}(k, w.kind, w.permits, NULL) THEN RETURN; END IF;
    DELETE FROM ${KW} WHERE token = w.token;
    f := nextval('${seq}');
    INSERT INTO ${H} (token, key, kind, fence, expires_at)
      VALUES (w.token, k, w.kind, f, least(clock_timestamp() + w.ttl_ms * interval '1 millisecond', w.deadline));
    PERFORM pg_notify(w.channel, w.token || ' ' || f);
  END LOOP;
END $fn$`,
    ],
    [
      krelease,
      '(text, text)',
      `CREATE FUNCTION ${krelease}(k text, tok text) RETURNS boolean LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE was_live boolean;
BEGIN
  PERFORM ${krow}(k);
  DELETE FROM ${H} WHERE token = tok AND key = k RETURNING expires_at >= now() INTO was_live;
  ${tidy}
  RETURN coalesce(was_live, false);
END $fn$`,
    ],
    [
      kleave,
      '(text, text)',
      `CREATE FUNCTION ${kleave}(k text, tok text) RETURNS void LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM ${krow}(k);
  DELETE FROM ${KW} WHERE token = tok;
  DELETE FROM ${H} WHERE token = tok AND key = k; -- a grant that raced the give-up: passed on below
  ${tidy}
END $fn$`,
    ],
    [
      kacquire,
      '(text, text, text, integer, text, float8, boolean, text, float8)',
      `CREATE FUNCTION ${kacquire}(k text, tok text, want text, want_permits integer, downgrade_of text, ttl float8,
  do_join boolean, chan text, lease float8, OUT held boolean, OUT fence bigint, OUT remaining_ms float8,
  OUT recorded_permits integer) LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  held := false;
  PERFORM ${krow}(k);
  DELETE FROM ${H} WHERE key = k AND expires_at < clock_timestamp();
  PERFORM ${kgrant}(k);
  IF want = 'permit' THEN
    -- The semaphore's size lives in its kinds row, under that row's lock, while anyone holds or waits
    -- (the row goes with the last of them; a record nobody else holds or waits under is stale and
    -- replaced). Another size while others hold or wait: refused, nothing taken or queued.
    SELECT g.permits INTO recorded_permits FROM ${G} g WHERE g.key = k;
    IF recorded_permits IS DISTINCT FROM want_permits THEN
      IF recorded_permits IS NULL OR (NOT EXISTS (SELECT 1 FROM ${H} WHERE key = k AND token <> tok)
          AND NOT EXISTS (SELECT 1 FROM ${KW} WHERE key = k AND token <> tok)) THEN
        UPDATE ${G} SET permits = want_permits WHERE key = k;
      ELSE
        DELETE FROM ${KW} WHERE token = tok;
        PERFORM ${kgrant}(k);
        fence := NULL;
        RETURN;
      END IF;
    END IF;
    recorded_permits := NULL;
  END IF;
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
END $fn$`,
    ],
  ];
  return {
    schema: [
      `CREATE TABLE IF NOT EXISTS ${G} (key text PRIMARY KEY)`,
      // A semaphore's permits (kacquire v2); added to tables made before it.
      addColumnOnce(G, 'permits', 'integer'),
      `CREATE TABLE IF NOT EXISTS ${H} (token text PRIMARY KEY, key text NOT NULL, kind text NOT NULL, fence bigint NOT NULL, expires_at timestamptz NOT NULL)`,
      createIndexOnce(`${qualifier}"${table.slice(0, 52)}_holders_k"`, `ON ${H} (key)`),
      `CREATE TABLE IF NOT EXISTS ${KW} (token text PRIMARY KEY, key text NOT NULL, seq bigint NOT NULL, kind text NOT NULL, permits integer NOT NULL, channel text NOT NULL, ttl_ms float8 NOT NULL, deadline timestamptz NOT NULL)`,
      createIndexOnce(`${qualifier}"${table.slice(0, 51)}_kwaiters_q"`, `ON ${KW} (key, seq)`),
      ...functions.slice(0, -1).map(([name, args, body]) => createOnce(name, args, body)),
      createOnce(...legacyKindFunction({ G, H, KW, seq, wseq, krow, kfits, kgrant, kacquire: fn('kacquire') })),
      ...functions.slice(-1).map(([name, args, body]) => createOnce(name, args, body)),
    ],
    /** The last function the schema creates: once it exists, the whole schema does (the permits column too). */
    probe: `${kacquire}(text, text, text, integer, text, float8, boolean, text, float8)`,
    /**
     * $1 key, $2 token, $3 kind, $4 permits, $5 the write token a read downgrades, $6 ttl, $7 join, $8
     * channel, $9 waiter lease. recorded_permits: set only when the semaphore is in use with another size.
     */
    acquire: `SELECT held, fence::text AS fence, remaining_ms, recorded_permits FROM ${kacquire}($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    release: `SELECT ${krelease}($1, $2) AS live`,
    leave: `SELECT ${kleave}($1, $2)`,
  };
}
