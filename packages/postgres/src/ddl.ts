/** DDL that runs safely on tables in use and under concurrent first clients, and SQL literal quoting. */

/** A DO block creating a function once, under a transaction lock (concurrent first clients do not race). */
export function createOnce(name: string, args: string, body: string): string {
  return `DO $do$ BEGIN
  PERFORM pg_advisory_xact_lock(1684366436, hashtext(${quoteLiteral(name)})); -- (int, int): not the advisory mode's bigint space
  IF to_regprocedure(${quoteLiteral(name + args)}) IS NULL THEN EXECUTE ${quoteLiteral(body)}; END IF;
END $do$`;
}

/*
 * The schema runs again whenever its probe function is missing, as after an upgrade that adds a
 * function, on tables in use. CREATE INDEX IF NOT EXISTS takes a ShareLock on its table and ALTER
 * TABLE ... ADD COLUMN IF NOT EXISTS an AccessExclusiveLock even when there is nothing to do, held
 * to the end of the schema's transaction: every lock call of the deployment would queue behind
 * them (a bench caught a 4 s stall). So they run only when the index or column is absent.
 */

/** `CREATE INDEX <name> <definition>` only when no relation of that name exists. `name` is quoted (and may be qualified). */
export function createIndexOnce(name: string, definition: string): string {
  const bare = name.slice(name.lastIndexOf('"', name.length - 2));
  return `DO $ddl$ BEGIN
  IF to_regclass(${quoteLiteral(name)}) IS NULL THEN EXECUTE ${quoteLiteral(`CREATE INDEX IF NOT EXISTS ${bare} ${definition}`)}; END IF;
END $ddl$`;
}

/** `ALTER TABLE <table> ADD COLUMN` only when the column is absent. `table` is quoted (and may be qualified). */
export function addColumnOnce(table: string, column: string, type: string): string {
  return `DO $ddl$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(${quoteLiteral(table)}) AND attname = ${quoteLiteral(column)} AND NOT attisdropped) THEN
    EXECUTE ${quoteLiteral(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${type}`)};
  END IF;
END $ddl$`;
}

export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
