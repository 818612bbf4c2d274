import { startProxy, type TcpProxy } from '../servers/tcp-proxy.js';
import type { CaseContext, ConformanceCase } from './context.js';
import { HandleTracker, untracked } from './handles.js';
import { firstTrueWhileCalling } from './keep-calling.js';
import { assert, waitUntil, within } from './util.js';

/**
 * How soon calls must get through again once the client's connections went silent: any adapter's
 * way of noticing (a command or statement deadline, ZooKeeper's read timeout at 2/3 of the session
 * timeout) plus a reconnect, with room for a loaded CI machine. Without one the calls time out until
 * the kernel gives up on the socket: hours.
 */
const RECOVERY_BOUND_MS = 20_000;
/** Any one call while the link is silent: its own deadline, with slack. Longer is a hang. */
const CALL_BOUND_MS = 15_000;

export const silentLink: ConformanceCase = {
  title: `connections that go silent for good (no bytes, no close: a NAT that forgot them): every call settles typed within ${CALL_BOUND_MS / 1_000} s, calls get through again within ${RECOVERY_BOUND_MS / 1_000} s, a lock held across it is never held by two, close() leaves no socket or timer behind`,
  requires: (options) => (options.proxied === undefined ? 'needs options.proxied (clients through a TCP proxy)' : undefined),
  async run(ctx) {
    const { host, port } = ctx.proxyTarget();
    // The proxy is the test's, not the client's: started outside the tracker, closed after the check.
    const proxy = await untracked(() => startProxy(host, port));
    const tracker = new HandleTracker();
    try {
      await tracker.run(() => silentLinkBody(ctx, proxy));
      // Checked while the proxy still holds the stranded connections open: a socket the client never
      // destroyed would otherwise be closed by the proxy's close, and the leak hidden.
      const clean = await waitUntil(() => tracker.open().length === 0, 2_000, 20);
      assert(clean, `after close(), the client that lost its link still has open: ${tracker.describeOpen()}`);
    } finally {
      tracker.stop();
      await proxy.close();
    }
  },
};

async function silentLinkBody(ctx: CaseContext, proxy: TcpProxy): Promise<void> {
  const client = ctx.proxiedClient(proxy);
  const held = await client.acquire('held', { ttlMs: Math.max(ctx.ttlMs, 3_000) });
  proxy.strand();
  let tries = 0;
  // Fresh keys: a grant the server made but never got to answer (the link was silent) cannot make a later try busy.
  const takesFreshKey = async (): Promise<boolean> => {
    const handle = await within(client.tryAcquire(`fresh-${tries++}`), CALL_BOUND_MS, 'a tryAcquire after the link went silent');
    if (handle === null) return false;
    await within(handle.release(), CALL_BOUND_MS, 'a release after the link came back');
    return true;
  };
  const answeredAfterMs = await firstTrueWhileCalling(takesFreshKey, 200, RECOVERY_BOUND_MS);
  assert(
    answeredAfterMs !== undefined,
    `no tryAcquire got through within ${RECOVERY_BOUND_MS} ms after the client's connections went silent (${tries} tried; each answered BackendUnavailableError)`,
  );
  console.info(`[deadbolt conformance] ${ctx.name}: calls got through again ${answeredAfterMs} ms after the link went silent`);
  // The lock held across it: kept (its session or lease survived) or reported lost, never both held.
  const other = ctx.client();
  const taken = await other.tryAcquire('held');
  if (taken !== null) {
    assert(!held.held, "another client took the key held across the silent link while its holder's handle still says held");
    await taken.release();
  }
  await within(Promise.all([client.close(), other.close()]), CALL_BOUND_MS, 'close() of the clients');
}

export const silentLinkCases: readonly ConformanceCase[] = [silentLink];
