import { afterEach, describe, expect, it } from 'vitest';
import {
  memoryCapabilities,
  MemoryBackend,
  memoryStore,
  type AcquireRequest,
  type AttemptResult,
  type Grant,
  type MemoryStore,
} from '../src/adapter/index.js';
import { ClientClosedError, createLockClient, InvalidArgumentError, UnsupportedOperationError, type LockClient } from '../src/index.js';
import { uniqueName } from './helpers.js';

/** Records what core asks of the backend: the claim's ttl, renewals (shortens) and releases. */
class Recording extends MemoryBackend {
  readonly calls: string[] = [];
  override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    this.calls.push(`claim ${request.ttlMs}`);
    return super.tryAcquire(request);
  }
  override renew(grant: Grant, ttlMs: number): Promise<boolean> {
    this.calls.push(`renew ${ttlMs}`);
    return super.renew(grant, ttlMs);
  }
  override release(grant: Grant): Promise<boolean> {
    this.calls.push('release');
    return super.release(grant);
  }
}

const clients: LockClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

function setup(label: string): { store: MemoryStore; backend: Recording; client: LockClient; other: () => LockClient } {
  const name = uniqueName(label);
  const store = memoryStore(name);
  const backend = new Recording(store);
  const client = createLockClient({ backend });
  const other = (): LockClient => {
    const made = createLockClient({ backend: new MemoryBackend(store) });
    clients.push(made);
    return made;
  };
  clients.push(client);
  return { store, backend, client, other };
}

describe('runOnce', () => {
  it('claims with ttl = lockAtMostForMs, shortens a fast run to the rest of lockAtLeastForMs, releases a slow one', async () => {
    const { backend, client } = setup('policy');
    await client.runOnce('fast', () => 1, { lockAtLeastForMs: 5_000, lockAtMostForMs: 60_000 });
    expect(backend.calls[0]).toBe('claim 60000');
    expect(backend.calls[1]).toMatch(/^renew \d+$/);
    const kept = Number(backend.calls[1]!.split(' ')[1]);
    expect(kept).toBeGreaterThan(4_000);
    expect(kept).toBeLessThanOrEqual(5_000);
    expect(backend.calls).not.toContain('release');
    backend.calls.length = 0;
    await client.runOnce('slow', () => new Promise((resolve) => setTimeout(resolve, 30)), {
      lockAtLeastForMs: 10,
      lockAtMostForMs: 60_000,
    });
    expect(backend.calls).toEqual(['claim 60000', 'release']);
  });

  it('rejects bad input with InvalidArgumentError before any I/O', async () => {
    const { store, client } = setup('input');
    const before = store.operations;
    const good = { lockAtLeastForMs: 1, lockAtMostForMs: 2 };
    const calls: (() => Promise<unknown>)[] = [
      () => client.runOnce('', () => 1, good),
      () => client.runOnce('job', () => 1, { lockAtLeastForMs: 3, lockAtMostForMs: 2 }),
      () => client.runOnce('job', () => 1, { lockAtLeastForMs: 0.5, lockAtMostForMs: 2 }),
      () => client.runOnce('job', () => 1, { lockAtLeastForMs: -1, lockAtMostForMs: 2 }),
      () => client.runOnce('job', () => 1, { lockAtLeastForMs: 1, lockAtMostForMs: Number.NaN }),
      () => client.runOnce('job', null as unknown as () => 1, good),
      () => client.runOnce('job', () => 1, { ...good, waitMs: 5 } as unknown as typeof good),
      () => client.runOnce('job', () => 1, { ...good, runner: '' }),
      () => client.runOnce('job', () => 1, undefined as unknown as typeof good),
      () => client.lastRun(''),
    ];
    for (const call of calls) await expect(call()).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(store.operations).toBe(before);
  });

  it("keeps the error's first line only, with a URL's credentials masked, and never its stack", async () => {
    const { client, other } = setup('record');
    const error = new Error('cannot reach postgres://app:s3cret@db:5432/x\nsecond line');
    await expect(client.runOnce('job', () => Promise.reject(error), { lockAtLeastForMs: 0, lockAtMostForMs: 1_000 })).rejects.toBe(error);
    const last = await other().lastRun('job');
    expect(last?.outcome).toBe('failed');
    expect(last?.error).toBe('cannot reach postgres://***@db:5432/x');
    expect(JSON.stringify(last)).not.toContain('s3cret');
    expect(JSON.stringify(last)).not.toContain('    at ');
  });

  it("aborts fn's signal on the caller's signal and on close(), and records 'aborted'", async () => {
    const { client, other } = setup('abort');
    const controller = new AbortController();
    const run = client.runOnce(
      'job',
      ({ signal }) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
          controller.abort(new Error('stop'));
        }),
      { lockAtLeastForMs: 0, lockAtMostForMs: 60_000, signal: controller.signal },
    );
    await expect(run).rejects.toThrow('stop');
    expect((await other().lastRun('job'))?.outcome).toBe('aborted');
    const closing = client.runOnce(
      'job2',
      ({ signal }) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
          void client.close();
        }),
      { lockAtLeastForMs: 0, lockAtMostForMs: 60_000 },
    );
    await expect(closing).rejects.toBeInstanceOf(ClientClosedError);
  });

  it('an already aborted signal rejects with its reason before any I/O', async () => {
    const { store, client } = setup('aborted');
    const before = store.operations;
    const reason = new Error('no');
    await expect(
      client.runOnce('job', () => 1, { lockAtLeastForMs: 0, lockAtMostForMs: 10, signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
    expect(store.operations).toBe(before);
  });

  it("a run that overran lockAtMostForMs does not overwrite the next run's record", async () => {
    const { client, other } = setup('overrun');
    const second = other();
    let release!: () => void;
    const late = client.runOnce('job', () => new Promise<void>((resolve) => (release = resolve)), {
      lockAtLeastForMs: 0,
      lockAtMostForMs: 30,
      runner: 'first',
    });
    await new Promise((resolve) => setTimeout(resolve, 60));
    const next = await second.runOnce('job', () => 'second', { lockAtLeastForMs: 0, lockAtMostForMs: 60_000, runner: 'second' });
    expect(next.ran).toBe(true);
    release();
    await late;
    const last = await second.lastRun('job');
    expect(last?.runner).toBe('second');
    expect(last?.outcome).toBe('ok');
  });

  it('refuses a session backend without its own claim, and a backend that keeps no records', async () => {
    class Session extends MemoryBackend {
      override readonly capabilities = { ...memoryCapabilities, lease: 'session' as const };
    }
    const session = createLockClient({ backend: new Session(memoryStore(uniqueName('session'))) });
    clients.push(session);
    await expect(session.runOnce('job', () => 1, { lockAtLeastForMs: 0, lockAtMostForMs: 10 })).rejects.toBeInstanceOf(
      UnsupportedOperationError,
    );
    class NoRecords extends MemoryBackend {
      override saveRun = undefined as unknown as MemoryBackend['saveRun'];
    }
    const plain = createLockClient({ backend: new NoRecords(memoryStore(uniqueName('plain'))) });
    clients.push(plain);
    await expect(plain.lastRun('job')).rejects.toBeInstanceOf(UnsupportedOperationError);
  });
});
