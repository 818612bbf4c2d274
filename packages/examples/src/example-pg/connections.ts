import { withDeadline } from '@deadbolt/core/adapter';
import pg from 'pg';

/**
 * One connection, opened on first use and replaced after it breaks (a restart, a terminated
 * session) or is dropped (a statement that got no answer by its deadline: the link may be silent).
 */
export class Connection {
  /** Statements sent or waiting on this connection: the pool picks the least busy. */
  busy = 0;
  #client: pg.Client | undefined;
  #ready: Promise<pg.Client> | undefined;

  constructor(private readonly config: pg.ClientConfig) {}

  /** Runs `work` on this connection's client, counted as busy from this call on (so the pool spreads a burst). */
  async use<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    this.busy += 1;
    try {
      return await work(await this.#connect());
    } finally {
      this.busy -= 1;
    }
  }

  /** Forgets `which` (default: the current client) and ends it, unless it was replaced already; the next statement opens another. */
  drop(which: pg.Client | undefined = this.#client): Promise<void> {
    if (which === undefined || which !== this.#client) return Promise.resolve();
    this.#client = undefined;
    this.#ready = undefined;
    return endClient(which);
  }

  #connect(): Promise<pg.Client> {
    if (this.#ready !== undefined) return this.#ready;
    const client = new pg.Client(this.config);
    // Without a listener, a connection the server ends between statements would crash the process.
    client.on('error', () => void this.drop(client));
    client.on('end', () => void this.drop(client));
    this.#client = client;
    this.#ready = client.connect().then(
      () => client,
      (error: unknown) => {
        void this.drop(client);
        throw error;
      },
    );
    return this.#ready;
  }
}

/**
 * A few connections that statements are spread over (the least busy takes the next). One
 * connection runs its statements one after another, so under load a statement queued behind
 * others can pass its deadline before it is even sent: four were enough for the conformance suite.
 */
export class Connections {
  readonly #all: readonly Connection[];

  constructor(config: pg.ClientConfig, size: number) {
    this.#all = Array.from({ length: size }, () => new Connection(config));
  }

  /** The least busy connection (the first on a tie, so a quiet backend keeps using one). */
  pick(): Connection {
    let best = this.#all[0]!;
    for (const connection of this.#all) if (connection.busy < best.busy) best = connection;
    return best;
  }

  async close(): Promise<void> {
    await Promise.all(this.#all.map((connection) => connection.drop()));
  }
}

/** Ends a client within 500 ms; a frozen or silent server's socket is destroyed instead (pg has no public way). */
async function endClient(client: pg.Client): Promise<void> {
  await withDeadline(client.end(), 500).catch(() => {
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  });
}
