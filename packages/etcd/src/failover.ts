import { ConstantBackoff, handleWhen, retry, type IPolicy } from 'cockatiel';
import { GRPCUnavailableError } from 'etcd3';

/**
 * The messages of a call that never reached a member: its connection could not be made (refused,
 * reset, unreachable, no route), or etcd3 had closed the member's channel before the call started.
 * Such a call has no outcome on the server, so sending it to another member cannot apply it twice.
 * A call that was sent and then lost its connection ("Connection dropped") is not among them.
 */
const neverSent = [
  /No connection established/i,
  /Channel closed before call started/i,
  /\bconnect (ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL)\b/i,
  /Failed to connect/i,
];

export function neverReachedMember(error: Error): boolean {
  return error instanceof GRPCUnavailableError && neverSent.some((pattern) => pattern.test(error.message));
}

/**
 * etcd3's policy around every unary call: one that never reached a member goes at once to the next
 * member of the shuffle, each member once. It keeps the call's absolute deadline (the call options
 * are resolved again per attempt from the same `{ deadline }`), so a failover never outlives it. A
 * call whose outcome is unknown (a deadline, a dropped connection) is never sent again.
 */
export function failoverPolicy(members: number): IPolicy {
  return retry(handleWhen(neverReachedMember), { maxAttempts: Math.max(0, members - 1), backoff: new ConstantBackoff(0) });
}
