import { metrics, trace, SpanStatusCode, type Meter, type MeterProvider, type Span } from '@opentelemetry/api';
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
let current: { provider: MeterProvider; instruments: Instruments } | undefined;

/**
 * Unlike the tracer API, the metrics API has no proxy: a meter taken before the application installs
 * its SDK stays a no-op forever, and ESM evaluates `import '@deadbolt/core'` before the app's own
 * `sdk.start()`. So the instruments follow whichever MeterProvider is global at the time of use.
 */
function instrumentsNow(): Instruments {
  const provider = metrics.getMeterProvider();
  if (current?.provider !== provider)
    current = { provider, instruments: createInstruments(provider.getMeter('@deadbolt/core', coreVersion)) };
  return current.instruments;
}

export const instruments: Instruments = {
  get acquisitions() {
    return instrumentsNow().acquisitions;
  },
  get waitTime() {
    return instrumentsNow().waitTime;
  },
  get timeouts() {
    return instrumentsNow().timeouts;
  },
  get lost() {
    return instrumentsNow().lost;
  },
  get renewals() {
    return instrumentsNow().renewals;
  },
};

/**
 * Runs `fn` inside a span named `deadbolt.<operation>`. A failure sets ERROR and records the
 * exception; success leaves the status unset, as the OpenTelemetry spec asks of instrumentation
 * libraries (OK is the application's call).
 */
export async function traced<T>(
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
