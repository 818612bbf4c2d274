import { startPostgres } from '@deadbolt/conformance/servers';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { advisoryElectionCases } from './advisory-election.cases.js';
import { advisoryMultiCases } from './advisory-multi.cases.js';
import { advisoryMultiScaleCases } from './advisory-multi-scale.cases.js';
import { leaseElectionCases } from './lease-election.cases.js';
import { env } from './pg-env.js';

// Multi-key locks and elections (issue 17) on one server: a server start per file is CI time.
beforeAll(async () => {
  env.server = await startPostgres();
  env.admin = new pg.Client({ connectionString: env.server.url });
  env.admin.on('error', () => undefined);
  await env.admin.connect();
});
afterAll(async () => {
  await env.admin?.end();
  await env.server?.stop();
});

advisoryMultiCases();
advisoryMultiScaleCases();
advisoryElectionCases();
leaseElectionCases();
