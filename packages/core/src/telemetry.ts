import {
  createNoopMeter,
  metrics,
  ProxyTracerProvider,
  trace,
  SpanStatusCode,
  type Meter,
  type MeterProvider,
  type Span,
} from '@opentelemetry/api';
import { coreVersion } from './version.js';

/**
 * OpenTelemetry through the API package only: a no-op until the application installs an SDK, so
 * Deadbolt never chooses an exporter for anyone.
 */
const tracer = trace.getTracer('@deadbolt/core', coreVersion);

function createInstruments(meter: Meter) {
  return {
    acquisitions: meter.createCounter('deadbolt.lock.acquisitions', { description: 'Locks acquired (re-entries included)' }),
    waitTime: meter.createHistogram('deadbolt.lock.wait', { description: 'Time spent waiting for a lock', unit: 'ms' }),
    timeouts: meter.createCounter('deadbolt.lock.timeouts', { description: 'Acquisitions that gave up at waitMs' }),
    lost: meter.createCounter('deadbolt.lock.lost', { description: 'Locks lost while held' }),
    renewals: meter.createCounter('deadbolt.lock.renewals', { description: 'Lease renewals confirmed' }),
  };
}

type Instruments = ReturnType<typeof createInstruments>;
let current: { provider: MeterProvider; instruments: Instruments; on: boolean } | undefined;

/** The API's no-op meter: what every provider hands out until an SDK is installed. */
const NoopMeter = createNoopMeter().constructor;

/**
 * Unlike the tracer API, the metrics API has no proxy: a meter taken before the application installs
 * its SDK stays a no-op forever, and ESM evaluates `import '@deadbolt/core'` before the app's own
 * `sdk.start()`. So the instruments follow whichever MeterProvider is global at the time of use.
 */
function instrumentsNow(): { instruments: Instruments; on: boolean } {
  const provider = metrics.getMeterProvider();
  if (current?.provider !== provider) {
    const meter = provider.getMeter('@deadbolt/core', coreVersion);
    // The API's own no-op meter (no SDK installed) has no methods of its own; anything else records.
    current = { provider, instruments: createInstruments(meter), on: !(meter instanceof NoopMeter) || Object.keys(meter).length > 0 };
  }
  return current;
}

/**
 * Whether recording a metric does anything (an SDK's meter provider is installed): the hot path
 * skips building attribute objects for the no-op instruments otherwise.
 */
export function metricsOn(): boolean {
  return instrumentsNow().on;
}

export const instruments: Instruments = {
  get acquisitions() {
    return instrumentsNow().instruments.acquisitions;
  },
  get waitTime() {
    return instrumentsNow().instruments.waitTime;
  },
  get timeouts() {
    return instrumentsNow().instruments.timeouts;
  },
  get lost() {
    return instrumentsNow().instruments.lost;
  },
  get renewals() {
    return instrumentsNow().instruments.renewals;
  },
};

/**
 * Runs `fn` inside a span named `deadbolt.<operation>`. A failure sets ERROR and records the
 * exception; success leaves the status unset, as the OpenTelemetry spec asks of instrumentation
 * libraries (OK is the application's call).
 */
export function traced<T>(
  operation: string,
  attributes: () => Record<string, string | number | boolean>,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingOn()) {
    try {
      return fn(undefined);
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return tracedSpan(operation, attributes(), fn);
}

/**
 * Whether an SDK is installed: until then the API's global provider is a proxy with no delegate,
 * every span would be a no-op, and the span, its context and its attributes are not worth making
 * on every acquire (they showed in the uncontended profile). Asked per call: an SDK started after
 * import is picked up at once.
 */
export function tracingOn(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer('@deadbolt/core', coreVersion) !== undefined;
}

async function tracedSpan<T>(
  operation: string,
  attributes: Record<string, string | number | boolean>,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(`deadbolt.${operation}`, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      if (error instanceof Error) span.recordException(error);
      throw error;
    } finally {
      span.end();
    }
  });
}
