import { Cluster, type ChainableCommander, type Redis } from 'ioredis';
import { slotOf } from './keys.js';
import { asOutage, type ReplicaWait } from './replica-ack.js';

/**
 * Sends one command per key in ONE pipeline per connection (a Cluster pipeline may only touch one
 * node, so there it is one pipeline per master) and returns the replies in key order. Throws if any
 * reply is an error: the caller cannot know that renewal's outcome. With `wait`, each pipeline ends
 * with WAIT, and where fewer replicas acknowledged its writes, its replies are undefined: a renewal
 * the replicas may not have cannot be trusted through a failover.
 */
export async function pipelined(
  connection: Redis | Cluster,
  keys: readonly string[],
  queue: (pipeline: ChainableCommander, index: number) => void,
  wait?: ReplicaWait,
): Promise<unknown[]> {
  const groups = new Map<string, number[]>();
  for (const [index, key] of keys.entries()) {
    const group = connection instanceof Cluster ? nodeOfSlot(connection, slotOf(key)) : 'single';
    const members = groups.get(group) ?? [];
    members.push(index);
    groups.set(group, members);
  }
  const replies: unknown[] = new Array<unknown>(keys.length);
  await Promise.all(
    [...groups.values()].map(async (indices) => {
      const pipeline = connection.pipeline();
      for (const index of indices) queue(pipeline, index);
      if (wait !== undefined) pipeline.wait(wait.replicas, wait.timeoutMs);
      const results = (await pipeline.exec()) ?? [];
      const [waitError, acknowledged] = wait === undefined ? [null, 0] : (results[indices.length] ?? [new Error('no WAIT reply'), 0]);
      if (waitError) throw asOutage(waitError);
      const trusted = wait === undefined || Number(acknowledged) >= wait.replicas;
      for (const [position, index] of indices.entries()) {
        const [error, reply] = results[position] ?? [new Error('no reply in the pipeline'), undefined];
        if (error) throw asOutage(error);
        replies[index] = trusted ? reply : undefined;
      }
    }),
  );
  return replies;
}

/** Which master serves a slot; before the slot map is loaded, each slot is its own group. */
function nodeOfSlot(cluster: Cluster, slot: number): string {
  const owners = (cluster as unknown as { slots: (string[] | undefined)[] }).slots[slot];
  return owners?.[0] ?? `slot:${slot}`;
}
