import { BackendConfigurationError, InvalidArgumentError } from '@deadbolt/core/adapter';
import { EtcdAuthenticationFailedError, EtcdPermissionDeniedError } from 'etcd3';

/**
 * A refused login or a user without permission on the keys: etcd answered, and retrying will not
 * help (fix the credentials or the user's role), so not an outage. etcd's messages never quote the
 * password.
 */
export function refusedConfiguration(error: unknown, key: string, endpoint: string): BackendConfigurationError | undefined {
  if (!(error instanceof EtcdAuthenticationFailedError || error instanceof EtcdPermissionDeniedError)) return undefined;
  return new BackendConfigurationError(`etcd at ${endpoint}: ${error.message}`, { key, backend: 'etcd', cause: error });
}

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
