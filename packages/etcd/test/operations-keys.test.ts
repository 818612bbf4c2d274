import type { IKeyValue } from 'etcd3';
import { describe, expect, it } from 'vitest';
import { encodeName } from '../src/keys.js';
import { classify, decodeSegment, markerKey } from '../src/operations.js';

/** The pure parts of operations.ts: who holds by the recipes' rules, and names back from keys. */
const kv = (key: string, revision: number, value = ''): IKeyValue =>
  ({ key: Buffer.from(key), value: Buffer.from(value), create_revision: String(revision), lease: '1' }) as IKeyValue;
const holding = (prefix: string, kvs: IKeyValue[]): string[] =>
  classify(prefix, kvs).flatMap((one) => (one.holds ? [`${one.kind}:${one.kv.key.toString().slice(prefix.length)}`] : []));

describe('classify', () => {
  it('a lock: only the oldest contender holds', () => {
    expect(holding('n/', [kv('n/a', 5), kv('n/b', 6)])).toEqual(['mutex:a']);
  });
  it('readers hold until the first writer; the writer behind them waits', () => {
    expect(holding('n/', [kv('n/read/a', 5), kv('n/read/b', 6), kv('n/write/c', 7), kv('n/read/d', 8)])).toEqual([
      'read:read/a',
      'read:read/b',
    ]);
  });
  it('a downgraded read holds beside its write', () => {
    expect(holding('n/', [kv('n/write/a', 5), kv('n/downgrade/a', 9)])).toEqual(['write:write/a', 'downgrade:downgrade/a']);
  });
  it('the first <permits> permit keys hold, the count read from the oldest', () => {
    const permits = [kv('n/permit/a', 5, '2'), kv('n/permit/b', 6, '2'), kv('n/permit/c', 7, '2')];
    expect(holding('n/', permits)).toEqual(['permit:permit/a', 'permit:permit/b']);
  });
  it('keys of another layout under the prefix are no contenders', () => {
    expect(classify('n/', [kv('n/other/x', 5)])).toEqual([]);
  });
});

describe('names from keys', () => {
  it('decodeSegment undoes encodeName, for plain names, slashes and percent signs', () => {
    for (const name of ['plain', 'jobs/a', '50%', 'a%2Fb', '/x/'] as const) expect(decodeSegment(encodeName(name))).toBe(name);
  });
  it("the marker's segment is no lock name", () => {
    const marker = markerKey('ns/', 'ns/k/1f', '12');
    expect(marker).toBe('ns/%forced/12/ns/k/1f');
    expect(decodeSegment(marker.slice('ns/'.length).split('/')[0]!)).toBeUndefined();
  });
});
