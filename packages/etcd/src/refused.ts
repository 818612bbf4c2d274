import { InvalidArgumentError, type ConnectionErrorClassifier } from '@deadbolt/core/adapter';
import { EtcdAuthenticationFailedError, EtcdPermissionDeniedError } from 'etcd3';

/**
 * The kit's classify hook for etcd: a refused login or a user without permission on the keys is a
 * refused configuration (BackendConfigurationError, "etcd at host:port: <etcd's message>"): etcd
 * answered, and retrying will not help (fix the credentials or the user's role), so not an outage.
 * etcd's messages never quote the password.
 */
export const classifyEtcdError: ConnectionErrorClassifier = (error) =>
  error instanceof EtcdAuthenticationFailedError || error instanceof EtcdPermissionDeniedError ? 'refused' : undefined;

/**
 * etcd refuses a request over 1.5 MiB (its default --max-request-bytes) and a campaign would keep
 * retrying it: a participant id, the value of its contender key, is held well under that.
 */
export const maxCandidateBytes = 1024 * 1024;

export function checkCandidate(candidate: string, key: string): void {
  const bytes = Buffer.byteLength(candidate, 'utf8');
  if (bytes > maxCandidateBytes)
    throw new InvalidArgumentError('id', `${bytes} bytes, over etcd's limit of ${maxCandidateBytes} for a participant id`, {
      key,
      backend: 'etcd',
    });
}
