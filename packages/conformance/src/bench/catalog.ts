import type { ServerHandle } from '../servers/index.js';
import { openDeadbolt } from './deadbolt.js';
import { openNodeRedlock, openRedisSemaphore } from './raw/peers.js';
import { openRawRedis } from './raw/redis.js';
import type { Mutex, Subject, SubjectKind } from './subject.js';

/** One backend of the run: its server (if any), its modes and the baselines beside them. */
export interface BackendPlan {
  readonly backend: string;
  /** The adapter package that must be importable, and the server to start. */
  readonly adapterPackage?: string;
  start(): Promise<ServerHandle | undefined>;
  subjects(server: ServerHandle | undefined, ttlMs: number): Subject[];
  /** Modes measured at scale (10 000 held locks), with the URL of each. */
  scaleUrls(server: ServerHandle | undefined): { mode: string; url: string }[];
}

function subject(backend: string, mode: string, kind: SubjectKind, open: () => Promise<Mutex>): Subject {
  return { backend, mode, subject: kind, open };
}

function withMode(url: string, mode: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}mode=${mode}`;
}

export function backendPlans(startRedis: () => Promise<ServerHandle>): BackendPlan[] {
  return [
    {
      backend: 'memory',
      start: async () => undefined,
      subjects: (_, ttlMs) => [subject('memory', '-', 'deadbolt', () => openDeadbolt('memory://bench', ttlMs))],
      scaleUrls: () => [{ mode: '-', url: 'memory://bench-scale' }],
    },
    {
      backend: 'redis',
      adapterPackage: '@deadbolt/redis',
      start: startRedis,
      subjects: (server, ttlMs) => {
        const url = server!.url;
        return [
          subject('redis', 'bare protocol', 'raw', () => openRawRedis(url, ttlMs)),
          ...['setnx', 'hash-reentrant', 'getset'].map((mode) => subject('redis', mode, 'deadbolt', () => openDeadbolt(withMode(url, mode), ttlMs))),
          subject('redis', 'default settings', 'node-redlock', () => openNodeRedlock(url, ttlMs)),
          subject('redis', 'default settings', 'redis-semaphore', () => openRedisSemaphore(url, ttlMs)),
        ];
      },
      scaleUrls: (server) => ['setnx', 'hash-reentrant'].map((mode) => ({ mode, url: withMode(server!.url, mode) })),
    },
  ];
}
