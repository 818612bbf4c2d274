import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { expect, it } from 'vitest';

// Nothing here imports this package: core must load it by the URL's scheme on first use.
it('etcd:// and etcds:// load @deadbolt/etcd on first use, then refuse a bad URL before any I/O', async () => {
  for (const url of ['etcd://127.0.0.1:1', 'etcds://127.0.0.1:1']) {
    const client = createLockClient(url);
    expect(await client.capabilities()).toMatchObject({ consistency: 'CP', fencing: true, lease: 'session', election: true });
    await client.close();
  }
  // Loaded now: a bad URL is refused at once, typed.
  expect(() => createLockClient('etcd://127.0.0.1:1?nosuch=1')).toThrow(InvalidArgumentError);
});
