import { describeLockConformance } from '@deadbolt/conformance';
import { postgresStatementCount, startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import type { LockBackend } from '@deadbolt/core/adapter';
import pg from 'pg';
import { advisoryCapabilities, createPostgresBackend, leaseCapabilities } from '../src/index.js';

const advisoryBackends = new WeakMap<LockClient, LockBackend>();

/** The shared suite against both modes, with the fixture's restart/pause/down faults. */
const faults = {
  restart: (server: PostgresServerHandle) => server.restart(),
  // The whole cluster freezes: a container pause, or SIGSTOP of the postmaster and every backend.
  pause: (server: PostgresServerHandle) => server.pause(),
  resume: (server: PostgresServerHandle) => server.resume(),
  down: (server: PostgresServerHandle) => server.down(),
  up: (server: PostgresServerHandle) => server.up(),
  killConnections: (server: PostgresServerHandle) => terminateDeadboltSessions(server),
};

/** pg_terminate_backend of every session the adapter opened (application_name 'deadbolt'). */
async function terminateDeadboltSessions(server: PostgresServerHandle): Promise<void> {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'deadbolt' AND pid <> pg_backend_pid()",
    );
  } finally {
    await admin.end();
  }
}

/** Statements the server has run (pg_stat_statements), asked on a session of its own. */
async function statementCount(server: PostgresServerHandle): Promise<number> {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    return await postgresStatementCount((sql) => admin.query(sql));
  } finally {
    await admin.end();
  }
}

/** The fixture's URL carries its password: the credential scan looks for it. */
const credentials = (server: PostgresServerHandle | undefined, { prefix }: { prefix: string }, mode: string) => ({
  secret: server!.password,
  client: createLockClient({ url: `${server!.url}?mode=${mode}&statementTimeoutMs=2000`, prefix }),
});

describeLockConformance<PostgresServerHandle>({
  name: 'postgres:advisory',
  capabilities: advisoryCapabilities,
  servers: () => startPostgres(),
  create: (server, { prefix }) => {
    const backend = createPostgresBackend(`${server!.url}?mode=advisory&statementTimeoutMs=2000`);
    const client = createLockClient({ backend, prefix });
    advisoryBackends.set(client, backend);
    return client;
  },
  // A crash as the server sees it: every session of the client ends, no unlock is sent.
  kill: async (client) => {
    await advisoryBackends.get(client)?.close();
  },
  // A read-write hold opens its own session: 60 chaos operations keep the case to a few seconds.
  chaosOperations: 60,
  faults,
  // A waiter in the server's queue holds a session of its own.
  manyWaiters: 40,
  credentials: (server, config) => credentials(server, config, 'advisory'),
  commandCount: (server) => statementCount(server!),
});

// Lease clients keep their backend, so the election's killed-leader case can crash one: its pool
// closes with no release, its rows stay until their server-clock expiry.
const leaseBackends = new WeakMap<LockClient, LockBackend>();
describeLockConformance<PostgresServerHandle>({
  name: 'postgres:lease',
  capabilities: leaseCapabilities,
  servers: () => startPostgres(),
  create: (server, { prefix }) => {
    const backend = createPostgresBackend(`${server!.url}?mode=lease&statementTimeoutMs=2000`);
    const client = createLockClient({ backend, prefix });
    leaseBackends.set(client, backend);
    return client;
  },
  kill: async (client) => {
    await leaseBackends.get(client)?.close();
  },
  faults,
  credentials: (server, config) => credentials(server, config, 'lease'),
  commandCount: (server) => statementCount(server!),
});
