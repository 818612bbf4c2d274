import type { BackendInspection, Grant, OperationsDriver } from '@deadbolt/core/adapter';
import { forceReleaseOn, forcedByOn, inspectOn, listKeysOn, type OperatorSite } from './operator-api.js';
import type { ZooKeeperSite } from './site.js';

/** Where the operator calls of one backend run: its session's client, its base path, one call's deadline. */
export function operatorSiteOf(site: ZooKeeperSite): OperatorSite {
  return {
    basePath: site.options.basePath,
    operationTimeoutMs: site.options.operationTimeoutMs,
    client: (key) => site.client(key),
  };
}

/** The operator API (operator-api.ts): inspect, forceRelease, list and the forced marker, each guarded. */
export class ZooKeeperOperations implements OperationsDriver {
  readonly #site: ZooKeeperSite;
  readonly #operator: OperatorSite;

  constructor(site: ZooKeeperSite) {
    this.#site = site;
    this.#operator = operatorSiteOf(site);
  }

  inspect(key: string): Promise<BackendInspection> {
    return this.#site.guard('inspect', key, () => inspectOn(this.#operator, key));
  }

  forceRelease(key: string, by: string): Promise<boolean> {
    return this.#site.guard('forceRelease', key, () => forceReleaseOn(this.#operator, key, by));
  }

  listKeys(prefix: string): AsyncIterable<string> {
    const keys = listKeysOn(this.#operator, prefix);
    const site = this.#site;
    return {
      [Symbol.asyncIterator]: () => ({ next: () => site.guard('list', prefix, () => keys.next()) }),
    };
  }

  forcedBy(grant: Grant): Promise<string | undefined> {
    return this.#site.guard('renew', grant.key, () => forcedByOn(this.#operator, grant));
  }
}
