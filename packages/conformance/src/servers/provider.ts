import { dockerEndpoint, probeDockerEngine } from './docker-api.js';
import type { ServerProviderName } from './types.js';

/** What decided the provider, for the one log line and for error messages. */
export interface ProviderDecision {
  readonly provider: ServerProviderName;
  /** e.g. "podman at unix:///run/podman/podman.sock", "DEADBOLT_SERVERS=process", "no container engine answers" */
  readonly reason: string;
}

let decision: Promise<ProviderDecision> | undefined;

/**
 * DEADBOLT_SERVERS=container|process|auto (default auto). auto picks `container` when the Docker
 * API answers at DOCKER_HOST or /var/run/docker.sock within 2 s, else `process`.
 * An explicit `container` with no engine answering fails at once (never a testcontainers timeout).
 * Decided once per process; logs one line to stderr saying which provider runs.
 */
export function decideServerProvider(env: NodeJS.ProcessEnv = process.env): Promise<ProviderDecision> {
  decision ??= chooseServerProvider(env).then((d) => {
    process.stderr.write(`[deadbolt] servers: ${d.provider} (${d.reason})\n`);
    return d;
  });
  return decision;
}

/** The provider fixtures use when a starter is not given one. */
export async function serverProvider(): Promise<ServerProviderName> {
  return (await decideServerProvider()).provider;
}

/** The decision for an environment, uncached and silent (decideServerProvider caches and logs). */
export async function chooseServerProvider(env: NodeJS.ProcessEnv): Promise<ProviderDecision> {
  const wanted = (env['DEADBOLT_SERVERS'] ?? 'auto').trim().toLowerCase() || 'auto';
  if (wanted !== 'auto' && wanted !== 'container' && wanted !== 'process') {
    throw new Error(`DEADBOLT_SERVERS must be container, process or auto, not "${wanted}"`);
  }
  if (wanted === 'process') return { provider: 'process', reason: 'DEADBOLT_SERVERS=process' };
  const endpoint = dockerEndpoint(env);
  // An explicit `container` waits longer: podman's API answers /version in ms when idle, but took
  // over a second on this 2-core machine under a load of 10+, and a false "no engine" fails the run.
  const engine = endpoint === undefined ? undefined : await probeDockerEngine(endpoint, wanted === 'container' ? 15_000 : 2_000);
  if (engine !== undefined && endpoint !== undefined) {
    return { provider: 'container', reason: `${engine} at ${endpoint.address}` };
  }
  const where = endpoint?.address ?? 'DOCKER_HOST (unset) or /var/run/docker.sock (absent)';
  if (wanted === 'container') {
    throw new Error(
      `DEADBOLT_SERVERS=container but no container engine answers at ${where}. ` +
        'Start Docker or podman (and set DOCKER_HOST), or run with DEADBOLT_SERVERS=process.',
    );
  }
  return { provider: 'process', reason: `no container engine answers at ${where}` };
}
