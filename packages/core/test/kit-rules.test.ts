import { describe, expect, it } from 'vitest';
import {
  BackendConfigurationError,
  BackendUnavailableError,
  builtInDialectClassifier,
  closedError,
  explainConnectionError,
  guardCall,
  leaseValidUntil,
  type ConnectionErrorClassifier,
} from '../src/adapter/index.js';

describe('adapter kit: leaseValidUntil', () => {
  it('is the send time plus the ttl less 1% (rounded up) and 2 ms', () => {
    expect(leaseValidUntil(1_000, 10_000)).toBe(1_000 + 10_000 - 100 - 2);
    expect(leaseValidUntil(0, 150)).toBe(150 - 2 - 2); // 1.5 ms rounds up to 2
    expect(leaseValidUntil(5, 1)).toBe(5 + 1 - 1 - 2);
  });
});

describe('adapter kit: closedError', () => {
  it('is BackendUnavailableError naming the action, key and backend, caused by "the backend is closed"', () => {
    const error = closedError('acquire', 'k', 'redis:fair');
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(error.message).toMatch(/^backend unavailable during acquire: the backend is closed\. /);
    expect(error.key).toBe('k');
    expect(error.backend).toBe('redis:fair');
    expect((error.cause as Error).message).toBe('the backend is closed');
    expect(closedError('close', undefined, 'b').key).toBeUndefined();
  });
});

describe('adapter kit: connection error classifiers', () => {
  const context = { action: 'acquire', key: 'k', backend: 'etcd', endpoint: 'h:2379' };
  const coded = (code: string, message: string): Error => Object.assign(new Error(message), { code });
  /** An etcd-like driver: gRPC status 16 is a refused login, 14 an unreachable server. */
  const classify: ConnectionErrorClassifier = (error) => {
    const code = (error as { code?: unknown }).code;
    if (code === 16) return { refused: 'authentication failed' };
    if (code === 7) return 'refused';
    if (code === 14) return 'unreachable';
    return undefined;
  };

  it("an adapter's refused verdict is BackendConfigurationError with its reason, or the driver's words", () => {
    const refused = explainConnectionError(Object.assign(new Error('invalid auth token'), { code: 16 }), context, classify);
    expect(refused).toBeInstanceOf(BackendConfigurationError);
    expect(refused?.message).toContain('etcd at h:2379: authentication failed (invalid auth token)');
    const denied = explainConnectionError(Object.assign(new Error('permission denied'), { code: 7 }), context, classify);
    expect(denied).toBeInstanceOf(BackendConfigurationError);
    expect(denied?.message).toContain('etcd at h:2379: permission denied');
  });

  it("an adapter's unreachable verdict is BackendUnavailableError naming where, without a system code", () => {
    const down = explainConnectionError(Object.assign(new Error('No connection established'), { code: 14 }), context, classify);
    expect(down).toBeInstanceOf(BackendUnavailableError);
    expect((down!.cause as Error).message).toBe('cannot reach etcd at h:2379: No connection established');
    expect(explainConnectionError(new Error('something else'), context, classify)).toBeUndefined();
  });

  it('what the classifier leaves undefined, the built-in rules decide: system codes and, for now, the dialect patterns', () => {
    expect(explainConnectionError(coded('ECONNREFUSED', 'connect ECONNREFUSED'), context, classify)).toBeInstanceOf(
      BackendUnavailableError,
    );
    expect(explainConnectionError(coded('28P01', 'password authentication failed'), context, classify)).toBeInstanceOf(
      BackendConfigurationError,
    );
    expect(builtInDialectClassifier(coded('3D000', 'x'))).toEqual({ refused: 'the database does not exist' });
    expect(builtInDialectClassifier(new Error('WRONGPASS invalid username-password pair'))).toBe('refused');
    expect(builtInDialectClassifier(new Error('ERR unknown command'))).toBeUndefined();
  });

  it("guardCall maps a failure by the call's classifier", async () => {
    const error = await guardCall(() => Promise.reject(Object.assign(new Error('bad token'), { code: 16 })), {
      ...context,
      timeoutMs: 1_000,
      classify,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BackendConfigurationError);
    expect((error as Error).message).toContain('authentication failed (bad token)');
  });
});
