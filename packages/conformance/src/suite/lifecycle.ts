import { inspect } from 'node:util';
import { DeadboltError, InvalidArgumentError, type Lock, type LockClient } from '@deadbolt/core';
import type { ConformanceCase } from './context.js';
import { assertClosesClean } from './handles.js';
import { assert, rejection } from './util.js';

/** Several clients opened and closed with locks held, and what they print. */

export const severalClientsClose: ConformanceCase = {
  title:
    'three clients closed with locks held: each close leaves no timer or socket, and their handles end (held false, release no-op, renew typed)',
  async run(ctx) {
    for (let i = 0; i < 3; i += 1) {
      // Per client: the runner's and earlier cases' resources are in the count before it too.
      await assertClosesClean(`client ${i}`, async () => {
        const client = ctx.client();
        const locks: Lock[] = [
          await client.acquire(`a${i}`, { autoRenew: true }),
          await client.acquire(`b${i}`, { autoRenew: false, ttlMs: 30_000 }),
        ];
        await client.close();
        for (const lock of locks) {
          assert(!lock.held, `${lock.key}: held after close()`);
          assert(lock.signal.aborted, `${lock.key}: signal not aborted after close()`);
          await lock.release();
          const renewError = await rejection(lock.renew());
          assert(renewError instanceof DeadboltError, `${lock.key}: renew after close() gave ${String(renewError)}`);
        }
      });
    }
    const other = ctx.client();
    for (const key of ['a0', 'b1', 'a2']) {
      const lock = await other.tryAcquire(key);
      assert(lock !== null, `${key} still busy after its client closed`);
      await lock.release();
    }
  },
};

/** Every way a value gets printed by accident. */
function printed(value: unknown): string[] {
  return [inspect(value, { depth: Number.POSITIVE_INFINITY, showHidden: true }), JSON.stringify(value) ?? '', String(value)];
}

export const credentialScan: ConformanceCase = {
  title: 'no credential is printed by inspect (any depth, showHidden), JSON.stringify or String of a client, lock or error',
  requires: (options) => (options.credentials ? undefined : 'no credentials hook (this backend takes no credentials)'),
  async run(ctx) {
    const { secret, client } = ctx.credentialed();
    const lock = await client.acquire('k', { waitMs: 0 });
    const busy = await rejection(client.acquire('k', { waitMs: 0, owner: 'someone-else' }));
    const invalid = await rejection(client.acquire('', { waitMs: 0 }));
    assert(invalid instanceof InvalidArgumentError, `empty key gave ${String(invalid)}`);
    const scan = (label: string, values: Record<string, unknown>): void => {
      for (const [name, value] of Object.entries(values)) {
        for (const text of printed(value)) {
          assert(
            !text.includes(secret) && !text.includes(encodeURIComponent(secret)),
            `${label}: printing the ${name} shows the credential`,
          );
        }
      }
    };
    scan('while held', { client, lock, busyError: busy, invalidError: invalid });
    await lock.release();
    await (client as LockClient).close();
    scan('after close', { client, lock });
  },
};

export const lifecycleCases: readonly ConformanceCase[] = [severalClientsClose, credentialScan];
