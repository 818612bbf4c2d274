import type { Client } from 'node-zookeeper-client';
import { stat } from './operations.js';

/**
 * A request every `periodMs` (exists on "/": the cheapest read) while locks are held, so the
 * session knows when the server last heard from it: `onAnswer(sentAt)` means the server heard from
 * us at sentAt at the latest, so it cannot expire the session before sentAt + sessionTimeout, and a
 * disconnect reports held locks lost no later than that.
 */
export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;
  private inFlight = false;

  constructor(
    private readonly client: Client,
    private readonly periodMs: number,
    private readonly onAnswer: (sentAt: number) => void,
    /** Whether it is still needed (locks are held); checked at each beat, which stops it when not. */
    private readonly needed: () => boolean = () => true,
  ) {}

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.beat(), this.periodMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async beat(): Promise<void> {
    // Stopped here rather than at the last release: a lock taken and released in a loop would
    // otherwise create and clear an interval timer on every cycle.
    if (!this.needed()) {
      this.stop();
      return;
    }
    if (!this.inFlight) {
      this.inFlight = true;
      const sentAt = Date.now();
      // Answered within the period, or not at all as far as liveness goes.
      stat(this.client, '/', sentAt + this.periodMs)
        .then(
          () => this.onAnswer(sentAt),
          () => undefined,
        )
        .finally(() => {
          this.inFlight = false;
        });
    }
  }
}
