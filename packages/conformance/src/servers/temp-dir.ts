import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The prefix of every fixture's temp dir; the orphan reaper looks for it. */
export const tempDirPrefix = 'deadbolt-server-';

/**
 * A fresh temp dir for one server, with an `owner.json` naming this process, so that a later run
 * can remove what a crashed one left (see orphans.ts).
 */
export function makeServerDir(kind: string): string {
  const dir = mkdtempSync(join(tmpdir(), `${tempDirPrefix}${kind}-`));
  writeFileSync(join(dir, 'owner.json'), JSON.stringify({ ownerPid: process.pid }));
  return dir;
}
