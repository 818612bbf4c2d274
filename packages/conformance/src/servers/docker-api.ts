import { request } from 'node:http';
import { existsSync } from 'node:fs';

/**
 * Where the Docker-compatible API is, the way testcontainers looks for it: DOCKER_HOST
 * (unix:///path or tcp://host:port), else /var/run/docker.sock. We talk to it with plain HTTP so
 * deciding the provider never loads testcontainers (which would wait long for a missing engine).
 */
export interface DockerEndpoint {
  /** As configured, for messages: unix:///run/podman/podman.sock */
  readonly address: string;
  readonly socketPath?: string;
  readonly host?: string;
  readonly port?: number;
}

export function dockerEndpoint(env: NodeJS.ProcessEnv = process.env): DockerEndpoint | undefined {
  const configured = env['DOCKER_HOST'];
  if (configured !== undefined && configured !== '') {
    if (configured.startsWith('unix://')) return { address: configured, socketPath: configured.slice('unix://'.length) };
    const tcp = /^tcp:\/\/([^:/]+):(\d+)/.exec(configured);
    if (tcp?.[1] !== undefined && tcp[2] !== undefined) return { address: configured, host: tcp[1], port: Number(tcp[2]) };
    return undefined;
  }
  if (existsSync('/var/run/docker.sock')) return { address: 'unix:///var/run/docker.sock', socketPath: '/var/run/docker.sock' };
  return undefined;
}

/** One request to the API; rejects on a connection error, a timeout, or a status >= 400. */
export function dockerRequest(endpoint: DockerEndpoint, method: string, path: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const target = endpoint.socketPath !== undefined ? { socketPath: endpoint.socketPath } : { host: endpoint.host, port: endpoint.port };
    const req = request({ ...target, method, path, timeout: timeoutMs, headers: { host: 'docker' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if ((res.statusCode ?? 500) >= 400) reject(new Error(`${method} ${path}: HTTP ${res.statusCode}: ${body.trim()}`));
        else resolve(body);
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** The engine's name ('podman' or 'docker') if the API answers within `timeoutMs`, else undefined. */
export async function probeDockerEngine(endpoint: DockerEndpoint, timeoutMs = 1_000): Promise<string | undefined> {
  try {
    const version = JSON.parse(await dockerRequest(endpoint, 'GET', '/version', timeoutMs)) as {
      Components?: { Name?: string }[];
    };
    const podman = (version.Components ?? []).some((c) => (c.Name ?? '').toLowerCase().includes('podman'));
    return podman ? 'podman' : 'docker';
  } catch {
    return undefined;
  }
}
