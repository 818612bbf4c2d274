import { BackendUnavailableError } from '@deadbolt/core/adapter';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';

/** `replicas` and `replicaTimeoutMs`, resolved: how many replicas must have a write, and how long WAIT waits. */
export interface ReplicaWait {
  readonly replicas: number;
  readonly timeoutMs: number;
}

/**
 * A grant the primary made but fewer replicas than asked for acknowledged within replicaTimeoutMs
 * (Redis WAIT). The grant was taken back before this was thrown: a failover to a replica without it
 * would hand the lock to someone else. Retrying helps once the replicas catch up.
 */
export class ReplicaAcknowledgementError extends BackendUnavailableError {
  /** How many replicas acknowledged the grant. */
  readonly acknowledged: number;
  /** How many were asked for (`replicas`). */
  readonly required: number;

  constructor(action: string, acknowledged: number, wait: ReplicaWait, context: { key: string; backend: string; undo?: unknown }) {
    const undone = context.undo === undefined ? 'the grant was taken back' : 'taking the grant back failed too (it ends with its ttl)';
    const reason =
      `${acknowledged} of ${wait.replicas} replicas acknowledged the grant within replicaTimeoutMs=${wait.timeoutMs} (WAIT), so ${undone}. ` +
      `Check that ${wait.replicas} replicas are connected and in sync (INFO replication on the primary), or lower replicas / raise replicaTimeoutMs`;
    super(action, { key: context.key, backend: context.backend, cause: context.undo ?? new Error(reason) });
    // Not "check that the server is up": it is, its replicas are what is missing.
    this.message = `${action} not acknowledged by enough replicas: ${reason} (key "${context.key}", backend ${context.backend})`;
    this.acknowledged = acknowledged;
    this.required = wait.replicas;
  }
}

/**
 * Queues commands and then WAIT on ONE pipeline, and returns their replies and WAIT's count. WAIT
 * answers once `replicas` replicas have acknowledged every write this connection made before it (so
 * the queued writes), or at its timeout with how many had. Same socket, same round trip: the
 * commands must touch one hash slot, so a Cluster pipeline goes to that slot's primary (WAIT
 * carries no key and follows them).
 */
export async function thenWait(
  connection: Redis | Cluster,
  wait: ReplicaWait,
  queue: (pipeline: ChainableCommander) => void,
): Promise<{ replies: unknown[]; acknowledged: number }> {
  const pipeline = connection.pipeline();
  queue(pipeline);
  pipeline.wait(wait.replicas, wait.timeoutMs);
  const results = (await pipeline.exec()) ?? [];
  const replies: unknown[] = [];
  for (const [error, reply] of results) {
    if (error) throw asOutage(error);
    replies.push(reply);
  }
  if (replies.length === 0) throw new Error('no reply in the pipeline');
  return { replies: replies.slice(0, -1), acknowledged: Number(replies[replies.length - 1]) };
}

/**
 * A grant that fewer replicas acknowledged is taken back (`undo`, the attempt's own compare-and-delete)
 * and the call fails with ReplicaAcknowledgementError. `granted` reads the script's reply.
 */
export async function acknowledgedGrant(
  connection: Redis | Cluster,
  wait: ReplicaWait,
  queue: (pipeline: ChainableCommander) => void,
  granted: (reply: unknown) => boolean,
  undo: () => Promise<unknown>,
  context: { action: string; key: string; backend: string },
): Promise<unknown> {
  const { replies, acknowledged } = await thenWait(connection, wait, queue);
  const reply = replies[0];
  if (!granted(reply) || acknowledged >= wait.replicas) return reply;
  const undoError = await undo().then(
    () => undefined,
    (error: unknown) => error ?? new Error('undo failed'),
  );
  throw new ReplicaAcknowledgementError(context.action, acknowledged, wait, { ...context, undo: undoError });
}

/**
 * ioredis fails a pipeline's commands with an error named AbortError when the connection closes
 * under them (a primary killed mid-call). That name means "the caller aborted" to the call guard,
 * which passes it on untyped: as a plain error it becomes the BackendUnavailableError it is.
 */
export function asOutage(error: Error): Error {
  return error.name === 'AbortError' ? new Error(error.message, { cause: error }) : error;
}
