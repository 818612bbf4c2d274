import { postgresStatementCount, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import pg from 'pg';

/** The example backend's URL on the fixture's server (its `postgres://` URL, under our scheme). */
export function examplePgUrl(server: PostgresServerHandle, url = server.url): string {
  return url.replace(/^postgres(?:ql)?:/, 'example-pg:');
}

/** A statement on an admin session of its own (the suite's hooks must not use the backend under test). */
async function admin<T>(server: PostgresServerHandle, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** faults.killConnections: the server ends every session the example backend opened. */
export function terminateExampleSessions(server: PostgresServerHandle): Promise<void> {
  return admin(server, async (client) => {
    await client.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'deadbolt-example' AND pid <> pg_backend_pid()",
    );
  });
}

/** commandCount: statements the server has run (pg_stat_statements). */
export function statementCount(server: PostgresServerHandle): Promise<number> {
  return admin(server, (client) => postgresStatementCount((sql) => client.query(sql)));
}

/** expireHold: the lock's row goes, behind its holder's back. */
export function deleteRow(server: PostgresServerHandle, table: string, fullKey: string): Promise<void> {
  return admin(server, async (client) => {
    await client.query(`DELETE FROM ${table} WHERE key = $1`, [fullKey]);
  });
}
