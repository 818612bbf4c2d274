import { createRequire } from 'node:module';
import {
  createNoopMeter,
  metrics,
  SpanStatusCode,
  trace,
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLockClient, inOwnerFlow, LockLostError, type LockClient, type LockEvents } from '../src/index.js';
import { coreVersion } from '../src/version.js';
import { freshMemory, recordEvents, SpyBackend, uniqueName } from './helpers.js';

const corePackage = createRequire(import.meta.url)('../package.json') as { version: string };

// ---- a minimal in-memory OpenTelemetry SDK: records span names, attributes, status; metric points ----

interface RecordedSpan {
  name: string;
  attributes: Attributes;
  status: SpanStatus | undefined;
  exceptions: unknown[];
  ended: boolean;
}

const spans: RecordedSpan[] = [];
const points: { instrument: string; value: number; attributes: Attributes }[] = [];

function recordingSpan(record: RecordedSpan): Span {
  const context: SpanContext = { traceId: '0'.repeat(31) + '1', spanId: '0'.repeat(15) + '1', traceFlags: 1 };
  const span: Span = {
    spanContext: () => context,
    setAttribute: (key, value) => {
      if (value !== undefined) record.attributes[key] = value;
      return span;
    },
    setAttributes: (attributes) => {
      Object.assign(record.attributes, attributes);
      return span;
    },
    addEvent: () => span,
    addLink: () => span,
    addLinks: () => span,
    setStatus: (status) => {
      record.status = status;
      return span;
    },
    updateName: (name) => {
      record.name = name;
      return span;
    },
    end: () => {
      record.ended = true;
    },
    isRecording: () => true,
    recordException: (exception) => {
      record.exceptions.push(exception);
    },
  };
  return span;
}

const tracer: Tracer = {
  startSpan(name: string, options?: SpanOptions): Span {
    const record: RecordedSpan = { name, attributes: { ...options?.attributes }, status: undefined, exceptions: [], ended: false };
    spans.push(record);
    return recordingSpan(record);
  },
  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: unknown[]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length > 1 ? (rest[0] as SpanOptions) : undefined;
    return fn(this.startSpan(name, options)) as ReturnType<F>;
  },
};

const tracersTaken: { name: string; version: string | undefined }[] = [];
const tracerProvider: TracerProvider = {
  getTracer: (name, version) => {
    tracersTaken.push({ name, version });
    return tracer;
  },
};

const meterProvider: MeterProvider = {
  getMeter(): Meter {
    const meter = createNoopMeter();
    const recordTo =
      (instrument: string) =>
      (value: number, attributes: Attributes = {}) => {
        points.push({ instrument, value, attributes });
      };
    meter.createCounter = (name) => ({ add: recordTo(name) }) as Counter;
    meter.createHistogram = (name) => ({ record: recordTo(name) }) as Histogram;
    return meter;
  },
};

beforeAll(async () => {
  // As in an application: the SDK is installed after @deadbolt/core was imported, and maybe after
  // a first lock was taken (the OpenTelemetry metrics API has no proxy: a meter taken then stays a no-op).
  const early = createLockClient(freshMemory('otel-early').url);
  await (await early.acquire('startup')).release();
  await early.close();
  expect(trace.setGlobalTracerProvider(tracerProvider)).toBe(true);
  expect(metrics.setGlobalMeterProvider(meterProvider)).toBe(true);
});

const clients: LockClient[] = [];

function track(client: LockClient): LockClient {
  clients.push(client);
  return client;
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(clients.splice(0).map((c) => c.close()));
  spans.length = 0;
  points.length = 0;
});

// ---- events ----

describe('events', () => {
  it('acquired and released carry key, owner, fence, wait time and reentry', async () => {
    const { url } = freshMemory('ev');
    const locks = track(createLockClient({ url, prefix: 'ns:' }));
    const events = recordEvents(locks);
    const lock = await locks.acquire('k');
    await lock.release();
    expect(events).toEqual([
      { name: 'acquired', payload: { key: 'k', owner: lock.owner, fence: lock.fence, waitedMs: expect.any(Number), reentered: false } },
      { name: 'released', payload: { key: 'k', owner: lock.owner } },
    ]);
  });

  it('a re-entry emits acquired (reentered) and each release emits released', async () => {
    const locks = track(createLockClient(freshMemory('ev-re').url));
    const events = recordEvents(locks);
    await inOwnerFlow(async () => {
      const a = await locks.acquire('k');
      const b = await locks.acquire('k');
      await b.release();
      await a.release();
    });
    expect(events.map((e) => e.name)).toEqual(['acquired', 'acquired', 'released', 'released']);
  });

  it('contended is emitted once per acquire that finds the lock busy, then acquired after the wait', async () => {
    const { url } = freshMemory('ev-contended');
    const holder = track(createLockClient(url));
    const waiter = track(createLockClient(url));
    const held = await holder.acquire('k');
    const events = recordEvents(waiter);
    const contended = new Promise<LockEvents['contended'][0]>((resolve) => waiter.once('contended', resolve));
    const pending = waiter.acquire('k');
    const first = await contended;
    expect(first).toMatchObject({ key: 'k', attempt: 1 });
    await held.release();
    const lock = await pending;
    expect(events.map((e) => e.name)).toEqual(['contended', 'acquired']);
    expect(first.owner).toBe(lock.owner);
    // Polling through several attempts still reports contention once.
    const spy = new SpyBackend(uniqueName('ev-poll'), { notifications: false });
    const polling = track(createLockClient({ backend: spy }));
    const pollEvents = recordEvents(polling);
    await track(createLockClient({ backend: new SpyBackend(spy.storeName) })).acquire('p', { ttlMs: 100, autoRenew: false });
    await polling.acquire('p', { waitMs: 5_000 });
    expect(spy.calls.tryAcquire).toBeGreaterThan(1);
    expect(pollEvents.filter((e) => e.name === 'contended')).toHaveLength(1);
  });

  it('renewed and lost are emitted in order as a lease lives and dies', async () => {
    vi.useFakeTimers();
    const spy = new SpyBackend(uniqueName('ev-life'));
    const locks = track(createLockClient({ backend: spy, defaults: { ttlMs: 3_000 } }));
    const events = recordEvents(locks);
    const lock = await locks.acquire('k');
    await vi.advanceTimersByTimeAsync(1_000);
    spy.controls.refuseRenewals = true;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(events.map((e) => e.name)).toEqual(['acquired', 'renewed', 'lost']);
    const lost = events[2]?.payload as LockEvents['lost'][0];
    expect(lost).toMatchObject({ key: 'k', owner: lock.owner });
    expect(lost.error).toBeInstanceOf(LockLostError);
  });

  it('a background failure with no error listener does not crash the process', async () => {
    vi.useFakeTimers();
    const spy = new SpyBackend(uniqueName('ev-error'));
    const silent = track(createLockClient({ backend: spy, defaults: { ttlMs: 3_000 } }));
    const lock = await silent.acquire('quiet');
    spy.controls.failRenewals = true;
    // No 'error' listener: a bare EventEmitter would throw from the timer; the client must not.
    await vi.advanceTimersByTimeAsync(1_500);
    expect(spy.calls.renew).toBeGreaterThan(0);
    expect(lock.held).toBe(true);
  });

  it('error carries the key for a renewal the backend could not answer', async () => {
    vi.useFakeTimers();
    const spy = new SpyBackend(uniqueName('ev-error-key'));
    const locks = track(createLockClient({ backend: spy, defaults: { ttlMs: 3_000 } }));
    const errors: LockEvents['error'][0][] = [];
    locks.on('error', (event) => errors.push(event));
    await locks.acquire('k');
    spy.controls.failRenewals = true;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(errors[0]?.key).toBe('k');
    expect(errors[0]?.error.name).toBe('BackendUnavailableError');
  });

  it('a throwing listener does not break the lock bookkeeping; it is reported as error', async () => {
    const locks = track(createLockClient(freshMemory('ev-throw').url));
    const errors: Error[] = [];
    locks.on('error', ({ error }) => errors.push(error));
    locks.on('acquired', () => {
      throw new Error('listener bug');
    });
    const lock = await locks.acquire('k');
    expect(lock.held).toBe(true);
    expect(locks.heldCount).toBe(1);
    expect(errors.map((e) => e.message)).toEqual(['listener bug']);
    await lock.release();
    expect(locks.heldCount).toBe(0);
  });

  it('off removes a listener', async () => {
    const locks = track(createLockClient(freshMemory('ev-off').url));
    const listener = vi.fn();
    locks.on('acquired', listener);
    locks.off('acquired', listener);
    await locks.acquire('k');
    expect(listener).not.toHaveBeenCalled();
  });
});

// ---- OpenTelemetry ----

describe('OpenTelemetry', () => {
  it('an acquire and a release are spans named deadbolt.*, with key and backend attributes and no status (the spec leaves success unset)', async () => {
    const locks = track(createLockClient(freshMemory('otel').url));
    const lock = await locks.acquire('order:1', { waitMs: 250 });
    await lock.release();
    expect(spans.map((s) => s.name)).toEqual(['deadbolt.acquire', 'deadbolt.release']);
    expect(spans[0]?.attributes).toMatchObject({ 'deadbolt.key': 'order:1', 'deadbolt.backend': 'memory', 'deadbolt.wait_ms': 250 });
    expect(spans.every((s) => s.ended && s.status === undefined)).toBe(true);
  });

  it('the tracer is named and versioned after the package', async () => {
    const locks = track(createLockClient(freshMemory('otel-version').url));
    await (await locks.acquire('k')).release();
    expect(tracersTaken).toContainEqual({ name: '@deadbolt/core', version: corePackage.version });
    expect(coreVersion).toBe(corePackage.version);
  });

  it('a failed acquire ends its span with ERROR status and the exception', async () => {
    const { url } = freshMemory('otel-fail');
    await track(createLockClient(url)).acquire('k');
    spans.length = 0;
    await expect(track(createLockClient(url)).acquire('k', { waitMs: 0 })).rejects.toThrow();
    expect(spans).toHaveLength(1);
    expect(spans[0]?.status?.code).toBe(SpanStatusCode.ERROR);
    expect(spans[0]?.exceptions[0]).toMatchObject({ name: 'LockTimeoutError' });
    expect(spans[0]?.ended).toBe(true);
  });

  it('metrics: acquisitions, wait time, timeouts, renewals and losses reach an SDK installed after import', async () => {
    vi.useFakeTimers();
    const spy = new SpyBackend(uniqueName('otel-metrics'));
    const locks = track(createLockClient({ backend: spy, defaults: { ttlMs: 3_000 } }));
    const lock = await locks.acquire('k');
    await expect(track(createLockClient({ backend: new SpyBackend(spy.storeName) })).acquire('k', { waitMs: 0 })).rejects.toThrow();
    await vi.advanceTimersByTimeAsync(1_000);
    spy.controls.refuseRenewals = true;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lock.held).toBe(false);
    const byName = (name: string) => points.filter((p) => p.instrument === name);
    expect(byName('deadbolt.lock.acquisitions')).toEqual([
      { instrument: 'deadbolt.lock.acquisitions', value: 1, attributes: { backend: 'spy-memory', reentered: false } },
    ]);
    expect(byName('deadbolt.lock.wait')).toHaveLength(1);
    expect(byName('deadbolt.lock.timeouts')).toHaveLength(1);
    expect(byName('deadbolt.lock.renewals')).toHaveLength(1);
    expect(byName('deadbolt.lock.lost')).toHaveLength(1);
  });
});
