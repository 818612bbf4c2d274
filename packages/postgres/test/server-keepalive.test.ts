import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientConfig } from '../src/connect.js';
import { resolvePostgresOptions } from '../src/index.js';

/**
 * Every connection Deadbolt opens (the pool's and the advisory sessions', which hold the locks) asks
 * the server to end it about 25 s after its peer went silent, instead of the OS default of over two
 * hours: the server's settings as the session itself reads them.
 */
let server: PostgresServerHandle;

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

async function settingsOf(url: string, names: readonly string[]): Promise<Record<string, string>> {
  const client = new pg.Client(clientConfig(resolvePostgresOptions(url)));
  await client.connect();
  try {
    const shown: Record<string, string> = {};
    for (const name of names)
      shown[name] = (await client.query<{ value: string }>('SELECT current_setting($1) AS value', [name])).rows[0]!.value;
    return shown;
  } finally {
    await client.end();
  }
}

const keepalive = ['tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count'];

describe('the server keepalive of our sessions', () => {
  it('probes after 10 s of silence, every 5 s, and gives up after 3 probes', async () => {
    expect(await settingsOf(`${server.url}?mode=advisory`, keepalive)).toEqual({
      tcp_keepalives_idle: '10',
      tcp_keepalives_interval: '5',
      tcp_keepalives_count: '3',
    });
  });

  it("keeps the connection string's own options beside it", async () => {
    const url = `${server.url}?mode=advisory&options=${encodeURIComponent('-c search_path=deadbolt_keepalive_test')}`;
    expect(await settingsOf(url, ['search_path', ...keepalive])).toEqual({
      search_path: 'deadbolt_keepalive_test',
      tcp_keepalives_idle: '10',
      tcp_keepalives_interval: '5',
      tcp_keepalives_count: '3',
    });
  });
});
