import type { PostgresServerHandle } from '@deadbolt/conformance/servers';
import type pg from 'pg';

/** The one server (and admin connection) of multi-election.test.ts, shared by its case files. */
export const env = {} as { server: PostgresServerHandle; admin: pg.Client };
