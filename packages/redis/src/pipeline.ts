import { Cluster, type ChainableCommander, type Redis } from 'ioredis';
import { slotOf } from './keys.js';

/**
 * Sends one command per key in ONE pipeline per connection (a Cluster pipeline may only touch one
 * node, so there it is one pipeline per master) and returns the replies in key order. Throws if any
 * reply is an error: the caller cannot know that renewal's outcome.
 */
export async function pipelined(
  connection: Redis | Cluster,
  keys: readonly string[],
  queue: (pipeline: ChainableCommander, index: number) => void,
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
      const results = (await pipeline.exec()) ?? [];
      for (const [position, index] of indices.entries()) {
        const [error, reply] = results[position] ?? [new Error('no reply in the pipeline'), undefined];
        if (error) throw error;
        replies[index] = reply;
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
