import { withDeadline } from '@deadbolt/core/adapter';
import type pg from 'pg';
import type { DedicatedSession } from './dedicated-session.js';

/** Every lease client's grant channel starts so (modes/lease/mode.ts); only their messages are deduplicated. */
export const grantChannelPrefix = 'deadbolt_grant_';

/** A user of the shared session (one backend's ReleaseListener). */
export interface ListenMember {
  /** A notification on a channel this member listens to. */
  notify(channel: string, payload: string): void;
  /** The session broke: messages may have been missed. */
  broken(): void;
}

/**
 * One LISTEN session per process for every backend with the same connection settings (issue 18).
 * PostgreSQL signals EVERY listening session of the database on each NOTIFY, whatever channels it
 * listens to (async.c, SignalBackends, PostgreSQL 15-17), and each wakes up to read the queue: 50
 * clients with a LISTEN session each cost 50 process wake-ups per lock hand-off, which on a small
 * server is most of the hand-off. Shared, they cost one. Members listen to their channels on it and
 * get only their channels' messages; the session connects on first use, reconnects on the next use
 * after a break (every member is told, and re-listens), and ends with its last member.
 */
export class ListenSession {
  private client: pg.Client | undefined;
  private link: DedicatedSession | undefined;
  private ready: Promise<pg.Client> | undefined;
  private readonly members = new Set<ListenMember>();
  /** Channel -> members that listen to it. */
  private readonly channels = new Map<string, Set<ListenMember>>();
  /** Channels whose LISTEN on the current client is done (or under way). */
  private listens = new Map<string, Promise<void>>();
  private readonly done = new Set<string>();
  /**
   * Grant messages delivered once, by whichever came first: the NOTIFY, or the reply of a release
   * made in this process (deliverLocally). The other copy is dropped when it comes. Bounded.
   */
  private readonly delivered = new Set<string>();
  /** The last LISTEN / UNLISTEN sent on each client (see command). */
  private readonly commandTails = new WeakMap<pg.Client, Promise<void>>();

  constructor(
    /** A new session (not yet connected) whose loss calls `onLost`. */
    private readonly open: (onLost: () => void) => DedicatedSession,
    private readonly timeoutMs: number,
    private readonly onEmpty: (session: ListenSession) => void,
  ) {}

  join(member: ListenMember): void {
    this.members.add(member);
  }

  /** Resolves once `channel` is listened to on the live session (connecting first); rejects if that fails. */
  async listen(member: ListenMember, channel: string): Promise<void> {
    if (!this.members.has(member)) throw new Error('the listen session was left');
    let listeners = this.channels.get(channel);
    if (listeners === undefined) this.channels.set(channel, (listeners = new Set()));
    listeners.add(member);
    const client = await this.connection();
    if (!this.members.has(member)) throw new Error('the listen session was left');
    let listening = this.listens.get(channel);
    if (listening === undefined) {
      listening = withDeadline(this.command(client, `LISTEN "${channel}"`), this.timeoutMs).then(() => {
        if (this.client === client) this.done.add(channel);
      });
      this.listens.set(channel, listening);
      listening.catch(() => {
        if (this.client === client) this.listens.delete(channel);
      });
    }
    await listening;
  }

  /** True when `channel` is listened to on the live session right now. */
  isListening(channel: string): boolean {
    return this.client !== undefined && this.done.has(channel);
  }

  /** The member goes: its channels are unlistened once nobody else listens to them; the last member ends the session. */
  leave(member: ListenMember): void {
    if (!this.members.delete(member)) return;
    for (const [channel, listeners] of this.channels) {
      if (!listeners.delete(member) || listeners.size > 0) continue;
      this.channels.delete(channel);
      this.listens.delete(channel);
      this.done.delete(channel);
      const client = this.client;
      if (client !== undefined && this.members.size > 0)
        void withDeadline(this.command(client, `UNLISTEN "${channel}"`), this.timeoutMs).catch(() => undefined);
    }
    if (this.members.size > 0) return;
    const link = this.link;
    this.reset();
    this.onEmpty(this);
    if (link !== undefined) void link.end();
  }

  /**
   * A grant message a release in this process made, from that release's reply: delivered now if a
   * member here listens to its channel, so a waiter in the releasing process does not wait for the
   * NOTIFY's trip through the server's listening backend (issue 18). The grant is committed either way.
   */
  deliverLocally(channel: string, payload: string): void {
    if (this.channels.get(channel)?.size) this.deliver(channel, payload);
  }

  /** Each grant message once (a release's reply and its NOTIFY carry the same "<token> <fence>"). */
  private deliver(channel: string, payload: string): void {
    if (channel.startsWith(grantChannelPrefix)) {
      const id = `${channel} ${payload}`;
      if (this.delivered.delete(id)) return;
      if (this.delivered.size >= 10_000) this.delivered.clear();
      this.delivered.add(id);
    }
    for (const member of this.channels.get(channel) ?? []) member.notify(channel, payload);
  }

  /**
   * LISTEN and UNLISTEN one at a time on the client (several clients of a process start listening
   * together): pg deprecates a query sent while another one runs, and pg 9 drops its queue.
   */
  private command(client: pg.Client, text: string): Promise<void> {
    const tail = this.commandTails.get(client) ?? Promise.resolve();
    const run = tail.then(() => client.query(text)).then(() => undefined);
    this.commandTails.set(
      client,
      run.catch(() => undefined),
    );
    return run;
  }

  private connection(): Promise<pg.Client> {
    this.ready ??= this.connect();
    return this.ready;
  }

  private reset(): void {
    this.client = undefined;
    this.link = undefined;
    this.ready = undefined;
    this.listens = new Map();
    this.done.clear();
  }

  private async connect(): Promise<pg.Client> {
    const link = this.open(() => broken());
    const client = link.client;
    this.client = client;
    this.link = link;
    const broken = (): void => {
      if (this.client !== client) return;
      this.reset();
      void link.end();
      for (const member of [...this.members]) member.broken();
    };
    client.on('notification', (message) => {
      if (message.payload === undefined || this.client !== client) return;
      this.deliver(message.channel, message.payload);
    });
    try {
      await link.open({ connectMs: this.timeoutMs });
      return client;
    } catch (error) {
      broken();
      throw error;
    }
  }
}

/** The process's sessions: by connection settings (a string), or by the application's own pool. */
const byConfig = new Map<string, ListenSession>();
const byPool = new WeakMap<object, ListenSession>();

/** The process-wide session for `share` (settings text, or the application's pool), created on demand. */
export function listenSessionFor(share: string | object, open: (onLost: () => void) => DedicatedSession, timeoutMs: number): ListenSession {
  const found = typeof share === 'string' ? byConfig.get(share) : byPool.get(share);
  if (found !== undefined) return found;
  const session = new ListenSession(open, timeoutMs, (empty) => {
    if (typeof share === 'string') {
      if (byConfig.get(share) === empty) byConfig.delete(share);
    } else if (byPool.get(share) === empty) byPool.delete(share);
  });
  if (typeof share === 'string') byConfig.set(share, session);
  else byPool.set(share, session);
  return session;
}

/** The process-wide session for `share` if one is open (a release delivers to its waiters). */
export function existingListenSession(share: string | object): ListenSession | undefined {
  return typeof share === 'string' ? byConfig.get(share) : byPool.get(share);
}
