import type { TcpProxy } from '@deadbolt/conformance/servers';
import type { AcquireRequest, Grant } from '@deadbolt/core/adapter';
import zookeeper from 'node-zookeeper-client';
import type { Client, Stat } from 'node-zookeeper-client';
import type { ZooKeeperBackend } from '../src/index.js';

export interface LostReport {
  readonly grant: Grant;
  readonly cause: Error;
}

/** An AcquireRequest whose onLost calls land in `lost` and wake `lostOnce`. */
export function request(
  key: string,
  owner = 'owner-1',
): AcquireRequest & { readonly lost: LostReport[]; readonly lostOnce: Promise<LostReport> } {
  const lost: LostReport[] = [];
  let notify!: (report: LostReport) => void;
  const lostOnce = new Promise<LostReport>((resolve) => (notify = resolve));
  return {
    key,
    owner,
    ttlMs: 10_000,
    lost,
    lostOnce,
    onLost: (grant, cause) => {
      lost.push({ grant, cause });
      notify({ grant, cause });
    },
  };
}

/** A plain ZooKeeper client for looking at the tree (and playing a Curator process). */
export async function rawClient(connectString: string): Promise<Client & { dispose(): Promise<void> }> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 6_000 });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('raw client: no session within 10 s')), 10_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.connect();
  });
  return Object.assign(client, {
    dispose: () =>
      new Promise<void>((resolve) => {
        client.once('disconnected', () => resolve());
        client.close();
        setTimeout(resolve, 1_000).unref();
      }),
  });
}

export function children(client: Client, path: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    client.getChildren(path, (error, names) => {
      if (error && (error as { code?: number }).code === zookeeper.Exception.NO_NODE) resolve([]);
      else if (error) reject(error);
      else resolve(names);
    }),
  );
}

export function exists(client: Client, path: string): Promise<boolean> {
  return new Promise((resolve, reject) => client.exists(path, (error, stat) => (error ? reject(error) : resolve(Boolean(stat)))));
}

export function stat(client: Client, path: string): Promise<Stat | undefined> {
  return new Promise((resolve, reject) => client.exists(path, (error, found) => (error ? reject(error) : resolve(found ?? undefined))));
}

export function createNode(client: Client, path: string, mode: number): Promise<string> {
  return new Promise((resolve, reject) =>
    client.mkdirp(path.slice(0, path.lastIndexOf('/')), (mkdirError) => {
      if (mkdirError) return reject(mkdirError);
      client.create(path, Buffer.from('curator'), mode, (error, created) => (error ? reject(error) : resolve(created)));
    }),
  );
}

export function removeNode(client: Client, path: string): Promise<void> {
  return new Promise((resolve, reject) => client.remove(path, -1, (error) => (error ? reject(error) : resolve())));
}

/** host:port list of a zookeeper:// URL. */
export function connectStringOf(url: string): string {
  return url.replace(/^zookeeper:\/\//, '').replace(/\/.*$/, '');
}

/** A promise that settles once `count` events have been seen. */
export function counter(count: number): { hit(): void; readonly done: Promise<void>; readonly seen: () => number } {
  let seen = 0;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    hit: () => {
      seen += 1;
      if (seen >= count) finish();
    },
    done,
    seen: () => seen,
  };
}

/**
 * Ends a backend's session for real, the way Curator's old KillSession did: a second client on the
 * same session id and password, closed. The victim talks through `proxy`, cut meanwhile, so it
 * cannot take its session back before the close lands; once healed, it reconnects and hears EXPIRED.
 */
export async function killSession(target: ZooKeeperBackend, proxy: TcpProxy, serverUrl: string): Promise<void> {
  const credentials = target.sessionCredentials()!;
  proxy.cut();
  const killer = zookeeper.createClient(connectStringOf(serverUrl), { sessionTimeout: 4000 });
  const manager = (killer as unknown as { connectionManager: { sessionId: Buffer; sessionPassword: Buffer } }).connectionManager;
  manager.sessionId = credentials.sessionId;
  manager.sessionPassword = credentials.password;
  await new Promise<void>((resolve) => {
    killer.once('connected', () => resolve());
    killer.connect();
  });
  await new Promise<void>((resolve) => {
    killer.once('disconnected', () => resolve());
    killer.close();
  });
  proxy.heal();
}
