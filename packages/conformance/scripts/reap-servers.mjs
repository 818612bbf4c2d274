#!/usr/bin/env node
// Removes the servers that crashed test runs left behind: containers labelled deadbolt.owner-pid
// and deadbolt-server-* temp dirs (and their processes) whose owning process is gone. Live runs
// are never touched. Needs the package built (npx tsc -b packages/conformance).
// Usage: node packages/conformance/scripts/reap-servers.mjs
import { reapOrphans } from '../dist/servers/orphans.js';

const report = await reapOrphans();
process.stdout.write(
  `[deadbolt] reaped ${report.containers} container(s), ${report.processGroups} process(es), ${report.tempDirs} temp dir(s)\n`,
);
