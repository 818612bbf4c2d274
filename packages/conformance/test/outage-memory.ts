// A memory "server" that can go down and come back with its data, for the election outage cases'
// mutant tests: while it is down every call fails as a refused connection would, and calls in
// flight (a campaign's wait) are cut off, as a dropped connection cuts them.
import {
  MemoryBackend,
  type AcquireRequest,
  type AttemptResult,
  type CampaignRequest,
  type Grant,
  type TermGrant,
} from '@deadbolt/core/adapter';
import type { ConformanceOptions, ServerLike } from '../src/index.js';

export class OutageServer implements ServerLike {
  private down = false;
  private readonly inFlight = new Set<AbortController>();

  async stop(): Promise<void> {
    this.up();
  }

  goDown(): void {
    this.down = true;
    for (const call of this.inFlight) call.abort(new Error('read ECONNRESET'));
    this.inFlight.clear();
  }

  up(): void {
    this.down = false;
  }

  /** Runs `fn` unless the server is down; an outage that starts meanwhile rejects it. */
  async call<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.down) throw new Error('connect ECONNREFUSED');
    const call = new AbortController();
    this.inFlight.add(call);
    try {
      const cut = new Promise<never>((_, reject) =>
        call.signal.addEventListener('abort', () => reject(call.signal.reason), { once: true }),
      );
      return await Promise.race([fn(call.signal), cut]);
    } finally {
      this.inFlight.delete(call);
    }
  }

  faults(): NonNullable<ConformanceOptions<OutageServer>['faults']> {
    return {
      restart: async () => {
        this.goDown();
        this.up();
      },
      down: async () => this.goDown(),
      up: async () => this.up(),
    };
  }
}

/** The memory backend behind an OutageServer. */
export function outageBackend(server: OutageServer): typeof MemoryBackend {
  return class extends MemoryBackend {
    override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
      return server.call(() => super.tryAcquire(request));
    }
    override campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
      return server.call((cut) => super.campaign(request, deadline, AbortSignal.any([signal, cut])));
    }
    override leader(key: string): Promise<string | undefined> {
      return server.call(() => super.leader(key));
    }
    override renew(grant: Grant, ttlMs: number): Promise<boolean> {
      return server.call(() => super.renew(grant, ttlMs));
    }
    override release(grant: Grant): Promise<boolean> {
      return server.call(() => super.release(grant));
    }
  };
}
