import type { Grant } from '@deadbolt/core/adapter';
import type { Client } from 'node-zookeeper-client';
import { stat, zxid } from './operations.js';

/**
 * `validate(grant)`: this exact grant holds while its node (the grant's token is the node's path)
 * exists with the czxid it was created with (the grant's fence) and is owned by our current session.
 * One `exists`. A node of an ended session is gone, or, in the moment before the server removes it,
 * owned by a session that is no longer ours.
 */
export async function nodeIsGrant(client: Client, grant: Grant, deadline: number): Promise<boolean> {
  const found = await stat(client, grant.token, deadline);
  if (found === undefined) return false;
  return zxid(found.czxid) === grant.fence && found.ephemeralOwner.equals(client.getSessionId());
}
