import { afterEach, describe, expect, it } from 'vitest';
import { MemoryBackend, memoryStore, type CampaignRequest, type Grant, type TermGrant } from '../src/adapter/index.js';
import {
  BackendConfigurationError,
  BackendUnavailableError,
  ClientClosedError,
  createLockClient,
  InvalidArgumentError,
  UnsupportedOperationError,
  type LockClient,
} from '../src/index.js';
import { nextEvent, uniqueName } from './helpers.js';

const clients: LockClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

/** A campaign that fails with `failure()` while `failing` is true, counting its calls. */
class FailingCampaign extends MemoryBackend {
  failing = true;
  campaigns = 0;
  releaseFails = false;
  constructor(private readonly failure: () => Error) {
    super(memoryStore(uniqueName('election-outage')), 'flaky');
  }
  override async campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    this.campaigns += 1;
    if (this.failing) throw this.failure();
    return super.campaign(request, deadline, signal);
  }
  override async release(grant: Grant): Promise<boolean> {
    if (this.releaseFails) throw new Error('connect ECONNREFUSED');
    return super.release(grant);
  }
}

function clientOn(backend: MemoryBackend): LockClient {
  const client = createLockClient({ backend });
  clients.push(client);
  return client;
}

const refused = (): Error => new Error('connect ECONNREFUSED');

describe('an election through an outage', () => {
  it('a failing campaign is reported on the error event and tried again with growing delays, until it leads', async () => {
    const backend = new FailingCampaign(refused);
    const client = clientOn(backend);
    const errors: { key: string | undefined; error: Error }[] = [];
    client.on('error', (event) => errors.push(event));
    const iterator = client.elect('e', { id: 'a' })[Symbol.asyncIterator]();
    const next = iterator.next();
    // Five failures: 50-100, 100-200, 200-400, 400-800 ms of backoff between them.
    while (errors.length < 5) await nextEvent(client, 'error');
    expect(errors[0]?.key).toBe('e');
    expect(errors[0]?.error).toBeInstanceOf(BackendUnavailableError);
    expect((errors[0]!.error.cause as Error).message).toBe('connect ECONNREFUSED');
    // The backoff spaces the tries: without it the loop would spin thousands of times meanwhile.
    expect(backend.campaigns).toBeLessThanOrEqual(6);
    backend.failing = false;
    const led = await next;
    expect(led.done).toBe(false);
    expect(led.value?.id).toBe('a');
    await iterator.return?.();
  });

  for (const [name, failure] of [
    ['InvalidArgumentError', () => new InvalidArgumentError('key', 'bad')],
    ['BackendConfigurationError', () => new BackendConfigurationError('password authentication failed')],
    ['UnsupportedOperationError', () => new UnsupportedOperationError('elect', 'no')],
  ] as const) {
    it(`a ${name} ends the candidacy at once, without a retry`, async () => {
      const backend = new FailingCampaign(failure);
      const client = clientOn(backend);
      client.on('error', () => undefined);
      const error = await client
        .elect('e', { id: 'a' })
        [Symbol.asyncIterator]()
        .next()
        .catch((e: unknown) => e);
      expect((error as Error).name).toBe(name);
      expect(backend.campaigns).toBe(1);
    });
  }

  it('resign() during the backoff ends the loop; close() rejects it with ClientClosedError; the caller signal with its reason', async () => {
    const resigned = clientOn(new FailingCampaign(refused));
    resigned.on('error', () => undefined);
    const election = resigned.elect('e', { id: 'a' });
    const pending = election[Symbol.asyncIterator]().next();
    await nextEvent(resigned, 'error');
    await election.resign();
    expect(await pending).toEqual({ done: true, value: undefined });

    const closed = createLockClient({ backend: new FailingCampaign(refused) });
    closed.on('error', () => undefined);
    const closing = closed.elect('e', { id: 'a' })[Symbol.asyncIterator]().next();
    await nextEvent(closed, 'error');
    await closed.close();
    await expect(closing).rejects.toBeInstanceOf(ClientClosedError);

    const signalled = clientOn(new FailingCampaign(refused));
    signalled.on('error', () => undefined);
    const controller = new AbortController();
    const stopped = signalled.elect('e', { id: 'a', signal: controller.signal })[Symbol.asyncIterator]().next();
    await nextEvent(signalled, 'error');
    controller.abort(new Error('shutting down'));
    await expect(stopped).rejects.toThrow('shutting down');
  });

  it('a term whose release fails (the server is down) is given up, reported, and the candidacy goes on', async () => {
    const backend = new FailingCampaign(refused);
    backend.failing = false;
    const client = clientOn(backend);
    const errors: Error[] = [];
    client.on('error', ({ error }) => errors.push(error));
    const iterator = client.elect('e', { id: 'a', ttlMs: 200 })[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    backend.releaseFails = true;
    const second = iterator.next();
    // The failed release left the old term on the server until its lease ran out: then we lead again.
    await nextEvent(client, 'error');
    backend.releaseFails = false;
    const led = await second;
    expect(first.value?.signal.aborted).toBe(true);
    expect(led.done).toBe(false);
    expect(led.value!.term).toBeGreaterThan(first.value!.term);
    expect(errors[0]).toBeInstanceOf(BackendUnavailableError);
    await iterator.return?.();
  });
});
