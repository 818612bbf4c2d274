import type { ConnectionErrorClassifier } from '@deadbolt/core/adapter';

/**
 * Redis's refused configurations, by the server's reply: a wrong username or password (WRONGPASS,
 * or "invalid password" and "ERR AUTH" from servers before ACLs), a password the server needs and
 * was not given (NOAUTH), a user whose ACL forbids the commands or keys the locks use (NOPERM).
 * Each becomes a BackendConfigurationError that says what to fix; any other error is not ours to judge.
 */
const refusals: readonly (readonly [RegExp, string])[] = [
  [/^WRONGPASS\b|invalid password|ERR AUTH/i, 'the server refused the username or password (AUTH)'],
  [/^NOAUTH\b/i, 'the server requires a password (AUTH) and none was given'],
  [/^NOPERM\b/i, "the user's ACL does not allow the commands or keys the locks use (EVALSHA, EVAL, GET, PUBLISH...)"],
];

export const classifyConnectionError: ConnectionErrorClassifier = (error) => {
  const message = error instanceof Error ? error.message : String(error);
  for (const [reply, why] of refusals) if (reply.test(message)) return { refused: why };
  return undefined;
};
