import type { Etcd3, IKeyValue, Watcher } from 'etcd3';

/**
 * Contender keys whose create txn timed out, watched for the create landing after all. A member
 * frozen with our txn in its socket runs it when it wakes, possibly after our delete of the same
 * name has run on another member: the key would then sit on our lease, which we keep alive, and
 * block its lock for as long as the client lives. So after that delete answers, the name is watched
 * for a put from the delete's revision on, and any put is deleted at once (compared on its
 * create_revision). The watch lasts as long as the lease the name carries: once the lease is gone,
 * a late create fails (its lease no longer exists). The name is never reused meanwhile.
 */
export class LateCreates {
  private readonly watching = new Map<string, { readonly leaseId: string; readonly watcher: Watcher }>();
  private readonly ended = new Set<string>();
  private closed = false;

  constructor(
    private readonly client: Etcd3,
    private readonly callTimeoutMs: number,
    /** Deletes the key as created at `revision`, retrying in the background until it answers. */
    private readonly removeCreated: (key: string, revision: string) => void,
    /** The name may be used again: its lease is gone. */
    private readonly release: (key: string) => void,
  ) {}

  /** Watches `key`, which carries `leaseId`, for puts from `fromRevision` on. */
  watch(key: string, leaseId: string, fromRevision: string): void {
    if (this.closed || this.ended.has(leaseId) || this.watching.has(key)) return;
    const watcher = this.client.watch().key(Buffer.from(key, 'utf8')).startRevision(fromRevision).only('put').watcher();
    watcher.on('put', (kv: IKeyValue) => this.removeCreated(key, kv.create_revision));
    // etcd3 reconnects a broken stream itself; an error is a watch the server cancelled (its start
    // revision compacted away, say): read the key, then watch again from there.
    watcher.on('error', () => {
      if (this.watching.get(key)?.watcher !== watcher) return;
      this.stop(key);
      void this.readThenWatch(key, leaseId);
    });
    this.watching.set(key, { leaseId, watcher });
  }

  private async readThenWatch(key: string, leaseId: string): Promise<void> {
    while (!this.closed && !this.ended.has(leaseId)) {
      try {
        const read = await this.client.kv.range({ key: Buffer.from(key, 'utf8') }, { deadline: Date.now() + this.callTimeoutMs });
        const kv = read.kvs[0];
        if (kv !== undefined) this.removeCreated(key, kv.create_revision);
        this.watch(key, leaseId, (BigInt(read.header.revision) + 1n).toString());
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, this.callTimeoutMs).unref());
      }
    }
  }

  /** The lease is gone (lost or revoked): nothing can be created on it any more. */
  leaseEnded(leaseId: string): void {
    this.ended.add(leaseId);
    for (const [key, entry] of this.watching) {
      if (entry.leaseId !== leaseId) continue;
      this.stop(key);
      this.release(key);
    }
  }

  close(): void {
    this.closed = true;
    for (const key of [...this.watching.keys()]) this.stop(key);
  }

  private stop(key: string): void {
    const entry = this.watching.get(key);
    this.watching.delete(key);
    // Not awaited: a cancel waits for the server's answer, which a frozen server never sends.
    entry?.watcher.cancel().catch(() => undefined);
  }
}
