import type { AcquireRequest, Grant, RunsDriver } from '@deadbolt/core/adapter';
import type { Client, Stat } from 'node-zookeeper-client';
import { encodeKey } from './naming.js';
import { CreateMode, create, getDataAndStat, isBadVersion, isNodeExists, isNoNode, mkdirp, request, zxid } from './operations.js';
import type { ResolvedZooKeeperOptions } from './options.js';

/**
 * Run-once jobs on ZooKeeper. A lock here is an ephemeral node, which dies with the session, and a
 * run's hold must outlive the process: so each job has a PERSISTENT node, `<basePath>_runs/<key>`,
 * whose data says who holds it and for how long (`leaseMs`), counted from the node's mtime, which
 * the ensemble's leader sets at each write. Every write sets a new lease from that write's own
 * mtime: the claim writes lockAtMostForMs, a shorten the rest of lockAtLeastForMs (0 frees it).
 * To tell whether a lease has run out, a claimant needs the server's now, not its own clock: it
 * writes the scratch data of `<basePath>_runs` and reads that write's mtime. A claim is a create, or
 * a setData guarded by the version it read, so two claimants cannot both win. The last run's record
 * is the data of the child `record`, apart from the claim, so writing it never moves the lease.
 */
interface Claim {
  readonly token: string;
  readonly owner: string;
  readonly leaseMs: number;
  readonly fence: number;
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');

function parseClaim(data: Buffer): Claim | undefined {
  try {
    const claim = JSON.parse(data.toString('utf8')) as Partial<Claim>;
    if (typeof claim.token !== 'string' || typeof claim.leaseMs !== 'number' || typeof claim.fence !== 'number') return undefined;
    return claim as Claim;
  } catch {
    return undefined;
  }
}

function parseRecord(data: Buffer): { readonly run: string; readonly record: string } | undefined {
  try {
    const item = JSON.parse(data.toString('utf8')) as { run?: unknown; record?: unknown };
    return typeof item.run === 'string' && typeof item.record === 'string' ? { run: item.run, record: item.record } : undefined;
  } catch {
    return undefined;
  }
}

/** A stat's mtime: ms since the epoch on the clock of the server that led the write. */
const mtimeOf = (stat: Stat): number => zxid(stat.mtime);

function setData(client: Client, path: string, data: Buffer, version: number, deadline: number): Promise<Stat> {
  return request<Stat>(
    'setData',
    deadline,
    (done) => client.setData(path, data, version, (error, stat) => done(error, stat)),
    undefined,
    client,
  );
}

type Guard = <T>(action: string, key: string, body: () => Promise<T>) => Promise<T>;

/** claimRun, shortenRun, saveRun and loadRun on the backend's session, each through its guard (typed errors). */
export function runOnceOn(
  options: ResolvedZooKeeperOptions,
  session: { ready(deadline: number): Promise<Client> },
  guard: Guard,
): Required<RunsDriver> {
  const root = `${options.basePath}_runs`;
  const claimPath = (key: string): string => `${root}/${encodeKey(key)}`;
  const recordPath = (key: string): string => `${claimPath(key)}/record`;
  const deadline = (): number => Date.now() + options.operationTimeoutMs;
  let rootMade = false;

  /** The server's now: the mtime of a write to the scratch data of the runs' root. */
  async function serverNow(client: Client): Promise<number> {
    return mtimeOf(await setData(client, root, Buffer.alloc(0), -1, deadline()));
  }

  async function claim(request: AcquireRequest): Promise<Grant | undefined> {
    const client = await session.ready(deadline());
    if (!rootMade) rootMade = (await mkdirp(client, root, deadline())) !== undefined;
    const token = `${request.owner}:${Date.now().toString(36)}:${Math.random().toString(36).slice(2)}`;
    const mine = (fence: number): Buffer => json({ token, owner: request.owner, leaseMs: request.ttlMs, fence } satisfies Claim);
    const found = await getDataAndStat(client, claimPath(request.key), deadline());
    if (found === undefined) {
      try {
        await create(client, claimPath(request.key), mine(1), CreateMode.PERSISTENT, deadline());
      } catch (error) {
        if (isNodeExists(error)) return undefined; // another claimant created it first
        throw error;
      }
      return { key: request.key, owner: request.owner, token, fence: 1 };
    }
    const held = parseClaim(found.data);
    if (held !== undefined && (await serverNow(client)) < mtimeOf(found.stat) + held.leaseMs) return undefined;
    const fence = (held?.fence ?? 0) + 1;
    try {
      await setData(client, claimPath(request.key), mine(fence), found.stat.version, deadline());
    } catch (error) {
      if (isBadVersion(error) || isNoNode(error)) return undefined; // claimed (or removed) since we read it
      throw error;
    }
    return { key: request.key, owner: request.owner, token, fence };
  }

  async function shorten(grant: Grant, keepMs: number): Promise<boolean> {
    const client = await session.ready(deadline());
    const found = await getDataAndStat(client, claimPath(grant.key), deadline());
    const held = found === undefined ? undefined : parseClaim(found.data);
    if (found === undefined || held?.token !== grant.token) return false;
    try {
      await setData(client, claimPath(grant.key), json({ ...held, leaseMs: keepMs }), found.stat.version, deadline());
      return true;
    } catch (error) {
      if (isBadVersion(error) || isNoNode(error)) return false;
      throw error;
    }
  }

  async function save(key: string, runId: string, record: string, replaces?: string): Promise<boolean> {
    const client = await session.ready(deadline());
    const data = json({ run: runId, record });
    const found = await getDataAndStat(client, recordPath(key), deadline());
    if (found === undefined) {
      if (replaces !== undefined) return false;
      try {
        await create(client, recordPath(key), data, CreateMode.PERSISTENT, deadline());
        return true;
      } catch (error) {
        if (!isNodeExists(error)) throw error;
        return save(key, runId, record, replaces);
      }
    }
    if (replaces !== undefined && parseRecord(found.data)?.run !== replaces) return false;
    try {
      await setData(client, recordPath(key), data, found.stat.version, deadline());
      return true;
    } catch (error) {
      if (isBadVersion(error) && replaces === undefined) return save(key, runId, record, replaces);
      if (isBadVersion(error) || isNoNode(error)) return false;
      throw error;
    }
  }

  async function load(key: string): Promise<string | undefined> {
    const client = await session.ready(deadline());
    const found = await getDataAndStat(client, recordPath(key), deadline());
    return found === undefined ? undefined : parseRecord(found.data)?.record;
  }

  return {
    claimRun: (request) => guard('runOnce', request.key, () => claim(request)),
    shortenRun: (grant, keepMs) => guard('runOnce', grant.key, () => shorten(grant, keepMs)),
    saveRun: (key, runId, record, replaces) => guard('runOnce', key, () => save(key, runId, record, replaces)),
    loadRun: (key) => guard('lastRun', key, () => load(key)),
  };
}
