import type { Client } from 'node-zookeeper-client';

/** node-zookeeper-client's private connection state: its reply reader and the current socket. */
interface Reader {
  readonly socket?: { destroy(): void };
  onSocketData(this: Reader, chunk: Buffer): void;
}

interface WithReader {
  readonly connectionManager?: Reader;
}

/**
 * The read timeout node-zookeeper-client leaves out (1.1.3, ConnectionManager: `this.readTimeout`
 * is commented out). It pings every third of the session timeout while idle but never checks that
 * anything comes back, so a connection that goes silent without closing (a NAT or firewall that
 * forgot it, a restarted container's port forwarder keeping the old one) stays "connected": every
 * request times out until the kernel gives up on the socket, and the session expires on the server
 * meanwhile. The Java client closes the socket after 2/3 of the session timeout without a byte from
 * the server and connects again with the same session; this does the same. The library's close
 * handler reports DISCONNECTED and reconnects, so a link that only went silent resumes the session
 * (held locks included) on a new connection, and a dead server is reported as a disconnect.
 *
 * One unref'd timer per connected client, re-armed only when it fires (reads just stamp a time).
 * The library binds `onSocketData` at each connect, so an own property set before connect() is the
 * one used (as in whole-frames.ts).
 */
export class ReadTimeout {
  private lastReadAt = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private readonly manager: Reader | undefined;

  constructor(
    client: Client,
    /** 2/3 of the negotiated session timeout, read when the timer is armed (it is known once connected). */
    private readonly timeoutMs: () => number,
  ) {
    const manager = (client as unknown as WithReader).connectionManager;
    if (manager === undefined || typeof manager.onSocketData !== 'function') return;
    this.manager = manager;
    const read = manager.onSocketData;
    const stamp = (): void => {
      this.lastReadAt = Date.now();
    };
    manager.onSocketData = function (this: Reader, chunk: Buffer): void {
      stamp();
      read.call(this, chunk);
    };
  }

  /** Connected (again): the server just answered; silence counts from now. */
  start(): void {
    if (this.manager === undefined) return;
    this.lastReadAt = Date.now();
    if (this.timer === undefined) this.arm(this.timeoutMs());
  }

  /** Disconnected or closing: nothing to watch until the next start(). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.check(), Math.max(1, ms));
    this.timer.unref();
  }

  private check(): void {
    this.timer = undefined;
    const timeoutMs = this.timeoutMs();
    const silentMs = Date.now() - this.lastReadAt;
    if (silentMs < timeoutMs) {
      this.arm(timeoutMs - silentMs);
      return;
    }
    // The library's close handler fails what is pending with CONNECTION_LOSS and reconnects.
    this.manager?.socket?.destroy();
  }
}
