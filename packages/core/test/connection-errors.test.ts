import { describe, expect, it } from 'vitest';
import { endpointOf, explainConnectionError, guardCall } from '../src/adapter/index.js';
import { BackendConfigurationError, BackendUnavailableError, InvalidArgumentError } from '../src/index.js';

function systemError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('adapter kit: connection errors', () => {
  const context = {
    action: 'acquire',
    key: 'k',
    backend: 'postgres:lease',
    endpoint: endpointOf([
      { host: 'db', port: 5432 },
      { host: '::1', port: 6 },
    ]),
  };

  it('a refused or unresolvable server: BackendUnavailableError naming backend, host:port and the system code', () => {
    const refused = explainConnectionError(systemError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:5432'), context);
    expect(refused).toBeInstanceOf(BackendUnavailableError);
    expect(refused?.message).toContain('postgres:lease at db:5432,[::1]:6: connect ECONNREFUSED 10.0.0.1:5432');
    expect(((refused!.cause as Error).cause as Error).message).toContain('ECONNREFUSED');
    // Node's AggregateError (IPv6, then IPv4) has an empty message.
    const aggregate = Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' });
    expect(explainConnectionError(aggregate, context)?.message).toContain('at db:5432,[::1]:6: ECONNREFUSED');
  });

  it("authentication failures and a missing database, as the adapter's classifier reads them, are BackendConfigurationError", () => {
    // What the PostgreSQL and Redis adapters' classifiers decide: core itself reads no driver's dialect.
    const classify = (error: unknown) => {
      const { code, message } = error as { code?: string; message: string };
      if (code === '28P01' || code === '3D000') return { refused: 'refused by the server' };
      return /^(WRONGPASS|NOAUTH)\b/.test(message) ? ('refused' as const) : undefined;
    };
    for (const error of [
      systemError('28P01', 'password authentication failed for user "app"'),
      systemError('3D000', 'database "nope" does not exist'),
      new Error('WRONGPASS invalid username-password pair or user is disabled.'),
      new Error('NOAUTH Authentication required.'),
    ]) {
      expect(explainConnectionError(error, context), error.message).toBeUndefined();
      const explained = explainConnectionError(error, context, classify);
      expect(explained, error.message).toBeInstanceOf(BackendConfigurationError);
      expect(explained?.message).toContain('db:5432');
      expect(explained?.backend).toBe('postgres:lease');
    }
  });

  it('anything else is left to the caller, and a DeadboltError is never rewritten', () => {
    expect(explainConnectionError(new Error('syntax error'), context)).toBeUndefined();
    expect(explainConnectionError(new InvalidArgumentError('x', 'y'), context)).toBeUndefined();
  });

  it('the call guard applies it with the endpoint it is given', async () => {
    const error = await guardCall(() => Promise.reject(systemError('ENOTFOUND', 'getaddrinfo ENOTFOUND db')), {
      ...context,
      timeoutMs: 1_000,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as Error).message).toContain('db:5432');
    expect((error as Error).message).toContain('ENOTFOUND');
  });
});
