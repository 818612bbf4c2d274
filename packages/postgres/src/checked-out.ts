import type pg from 'pg';

/** node-postgres' private link to its socket: what dropping a silent connection needs. */
interface WithSocket {
  readonly connection?: { readonly stream?: { destroy(): void } };
}

/**
 * One statement's pooled connection: checked out for it, given back after it. Two things pg-pool
 * leaves to whoever checks a connection out:
 * - An 'error' listener. pg-pool removes its own on checkout, and node-postgres emits 'error' when
 *   the connection ends under a statement in flight (a restart, a killed backend, a stranded link
 *   that the kernel finally resets): unheard, that is an uncaught exception that ends the app.
 * - A statement that never answers. A connection gone silent (a NAT or firewall that forgot it)
 *   keeps its statement pending, so the connection stays checked out for as long as the kernel
 *   keeps the socket (hours): the call guard gives up at its deadline, but the pool slot does not
 *   come back, and once every slot is stuck no statement runs at all. `drop()` (the guard's
 *   onDeadline) destroys the socket: the statement fails, and the connection goes back to the pool
 *   with that error, which ends it instead of reusing it.
 * A statement given up on may still run on the server (a frozen server wakes and reads it); the
 * caller's undo covers that, as before.
 */
export class CheckedOutConnection {
  private client: pg.PoolClient | undefined;
  private broken: Error | undefined;

  async run<T>(pool: pg.Pool, operation: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    this.client = client;
    const onError = (error: Error): void => {
      this.broken ??= error;
    };
    client.on('error', onError);
    try {
      return await operation(client);
    } finally {
      client.off('error', onError);
      this.client = undefined;
      client.release(this.broken);
    }
  }

  /** The statement got no answer within its deadline: close the connection under it. */
  drop(): void {
    const client = this.client;
    if (client === undefined) return;
    this.broken ??= new Error('no answer within the statement deadline: the connection was dropped');
    (client as unknown as WithSocket).connection?.stream?.destroy();
  }
}
