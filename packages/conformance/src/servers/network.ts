import { Network, type StartedNetwork } from 'testcontainers';
import { trackNetwork, untrackNetwork } from './exit-cleanup.js';

/** A user network for containers that reach each other by alias; remove() is idempotent. */
export interface OwnedNetwork {
  readonly network: StartedNetwork;
  remove(): Promise<void>;
}

export async function createNetwork(): Promise<OwnedNetwork> {
  const network = await new Network().start();
  trackNetwork(network.getId());
  let removing: Promise<void> | undefined;
  return {
    network,
    remove() {
      removing ??= network.stop().then(() => untrackNetwork(network.getId()));
      return removing;
    },
  };
}
