import pg from 'pg';

/** pg clients a test opened; `endAll` in afterEach/afterAll closes them. */
export class Clients {
  private readonly opened: pg.Client[] = [];

  constructor(private readonly url: () => string) {}

  async open(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.url() });
    client.on('error', () => undefined);
    await client.connect();
    this.opened.push(client);
    return client;
  }

  async endAll(): Promise<void> {
    await Promise.allSettled(this.opened.splice(0).map((client) => client.end()));
  }
}

/** Resolves once the backend of `client` waits on a lock (pg_stat_activity), by `deadlineMs`. */
export async function waitsOnLock(admin: pg.Client, client: pg.Client, deadlineMs = 20_000): Promise<void> {
  // Read from the connection's startup, not by a query: the client is busy with the one that waits.
  const pid = (client as unknown as { processID: number }).processID;
  const until = Date.now() + deadlineMs;
  for (;;) {
    const { rows } = await admin.query<{ waiting: boolean }>(
      "SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1",
      [pid],
    );
    if (rows[0]?.waiting === true) return;
    if (Date.now() > until) throw new Error(`backend ${pid} did not wait on a lock within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20)); // pg_stat_activity has no event to wait on
  }
}
