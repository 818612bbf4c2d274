/** The usage lines and --help texts. Exit codes are listed once, in the top-level help. */

export const runUsage = 'usage: deadbolt run <key> [--url URL] [--ttl ms] [--wait ms] [--grace ms] -- <command> [args...]';
export const leaderUsage = 'usage: deadbolt leader <name> [--url URL] [--watch [--interval ms]] [--json]';
export const mainUsage = 'usage: deadbolt <run|leader|inspect|list|release|watch> ... | deadbolt --help | deadbolt --version';
export const inspectUsage = 'usage: deadbolt inspect <key> [--url URL] [--json]';
export const listUsage = 'usage: deadbolt list [--url URL] [--prefix p] [--limit n] [--json]';
export const releaseUsage = 'usage: deadbolt release <key> --force [--url URL] [--json]';
export const watchUsage = 'usage: deadbolt watch <key...> [--url URL] [--interval ms]';
export const lastRunUsage = 'usage: deadbolt last-run <job> [--url URL] [--json]';

export const defaults = Object.freeze({ ttlMs: 30_000, waitMs: 10_000, graceMs: 5_000, intervalMs: 1_000 });

export const mainHelp = `${mainUsage}

Distributed locks for operators, over Redis, PostgreSQL, ZooKeeper or Memcached.

Commands:
  run <key> -- <command...>   run a command while holding the lock <key>
  leader <name>               print who leads the election <name>
  inspect <key>               who holds the lock <key>, with its fence and the lease left
  list                        the held locks (under --prefix)
  release <key> --force       take the lock <key> back from whoever holds it
  watch <key...>              a live view of the locks <key...>
  last-run <job>              when the run-once job <job> last ran, where, and how it ended

The backend is --url URL, or DEADBOLT_URL when --url is not given: redis://host:6379,
postgres://user:password@host:5432/db, zookeeper://host:2181, memcached://host:11211. Its adapter
package (@deadbolt/redis, @deadbolt/postgres, @deadbolt/zookeeper, @deadbolt/memcached) must be
installed beside @deadbolt/cli. memory:// is refused: it cannot be shared between processes.

Exit codes:
  0    done (run: the command's own code; a command killed by a signal: 128 + its number)
  1    leader: there is no leader; inspect: the key is free; release --force: nothing was held
  64   usage error; nothing was contacted
  69   the backend is unavailable (did not answer, or refused us)
  75   run: the lock stayed busy for all of --wait
  78   configuration: adapter package not installed, the server refused the URL's settings,
       or the backend cannot do it (leader on memcached; list on memcached; list and
       release --force on postgres mode=advisory)
  79   run: the lock was lost while the command ran; the command was stopped
  126  run: the command could not be executed
  127  run: the command was not found

Options for every command: --url URL, -h/--help. deadbolt --version prints the version.
Colour on a terminal only, never when NO_COLOR is set.`;

export const runHelp = `${runUsage}

Takes the lock <key>, runs the command while holding it, and releases it when the command exits.
Exits with the command's code. The lock is renewed automatically (every ttl/3) while the command runs.

The command gets DEADBOLT_KEY (the key) and, when the backend fences, DEADBOLT_FENCE (a number
that grows with each holder of the key: pass it to the data store so it can refuse a stale holder).
stdin, stdout and stderr are the command's. SIGINT, SIGTERM and SIGHUP sent to deadbolt are passed
on to the command; the lock is released once the command exits.

If the lock is lost while the command runs (a renewal failed, the lease ran out, someone forced it
away), the command gets SIGTERM, then SIGKILL after --grace ms if it is still running, and deadbolt
says why on stderr and exits 79.

Options:
  --url URL      the backend (default: DEADBOLT_URL)
  --ttl ms       lease length, renewed while the command runs (default ${defaults.ttlMs})
  --wait ms      how long to wait for a busy lock before giving up with exit 75 (default ${defaults.waitMs}; 0: try once)
  --grace ms     after a loss, how long the command has between SIGTERM and SIGKILL (default ${defaults.graceMs})
  -h, --help     this text

Exit codes: the command's; 64 usage, 69 backend unavailable, 75 lock busy for all of --wait,
78 configuration, 79 lock lost (command stopped), 126 not executable, 127 not found.`;

export const leaderHelp = `${leaderUsage}

Prints the id of the current leader of the election <name> (as given by its participants'
client.elect(name, { id })), or nothing and exit 1 when there is none.

--watch prints a line at every change of leader or term (an empty line, or "leader": null with
--json, when the election has none) until interrupted. It follows election.observe():
it reads the leader every --interval ms, so a change shorter than the interval can go unseen.

Options:
  --url URL        the backend (default: DEADBOLT_URL)
  --json           print {"leader": "<id>" | null, "at": "<ISO 8601 time>"} lines instead of bare ids
                   (with --watch also "term": the leader's term, null when none)
  --watch          keep printing changes until interrupted (SIGINT/SIGTERM: exit 0)
  --interval ms    --watch's reading interval (default ${defaults.intervalMs})
  -h, --help       this text

Exit codes: 0 a leader was printed (--watch: interrupted), 1 no leader, 64 usage, 69 backend
unavailable, 78 configuration.`;

export const inspectHelp = `${inspectUsage}

Prints who holds the lock <key> (every hold: the plain lock, a read-write lock's read or write
holds, a semaphore's permits), each with its kind, fence, the lease left in ms and its owner where
the backend stores one, and how many wait where the server queues them.

Options:
  --url URL      the backend (default: DEADBOLT_URL)
  --json         one line: {"key", "held", "holders": [{"kind", "owner"?, "fence"?, "ttlLeftMs"?}], "waiters"?}
  -h, --help     this text

Exit codes: 0 held, 1 free, 64 usage, 69 backend unavailable, 78 configuration (the backend cannot inspect).`;

export const listHelp = `${listUsage}

Prints every held lock under --prefix (all of them without it), as inspect does: a key line, then
a line per hold. With --json, one inspect --json object per line.

Options:
  --url URL      the backend (default: DEADBOLT_URL)
  --prefix p     only keys that start with p
  --limit n      at most n locks
  --json         one JSON object per line (the shape of inspect --json)
  -h, --help     this text

Exit codes: 0 done, 64 usage, 69 backend unavailable, 78 configuration.`;

export const releaseHelp = `${releaseUsage}

Takes the lock <key> back from every holder at once. The holders learn it at once where the
backend can tell them, else at their next renewal: their signal aborts as lost (a deadbolt run
holding it stops its command and exits 79). A holder that is still running is no longer excluded:
only a fence checked by the data store keeps its late writes out. Refused without --force.

Options:
  --url URL      the backend (default: DEADBOLT_URL)
  --force        confirm: take the lock away from whoever holds it
  --json         print {"key": "<key>", "released": true | false}
  -h, --help     this text

Exit codes: 0 released, 1 nothing was held, 64 usage (also without --force), 69 backend
unavailable, 78 configuration.`;

export const watchHelp = `${watchUsage}

Inspects the locks <key...> every --interval ms until interrupted (SIGINT/SIGTERM: exit 0). On a
terminal the table is redrawn in place; otherwise a line "<ISO 8601 time>  <key>  held|free  <holds>"
is printed each time a key's holds change (holder, fence, kind, waiters; not the lease left).

Options:
  --url URL        the backend (default: DEADBOLT_URL)
  --interval ms    how often to read (default ${defaults.intervalMs})
  -h, --help       this text

Exit codes: 0 interrupted, 64 usage, 69 backend unavailable, 78 configuration.`;

export const lastRunHelp = `${lastRunUsage}

Prints the record of the last run of the run-once job <job> (locks.runOnce): who ran it (its runner
id), when it started and finished (by the runner's clock), its fence, and its outcome: ok, failed or
aborted with the error's message, or running (also left behind by a runner that died mid-run).

Options:
  --url URL      the backend (default: DEADBOLT_URL)
  --json         one line: {"job", "runner", "startedAt", "finishedAt"?, "fence"?, "outcome", "error"?}, or {"job"} when it never ran
  -h, --help     this text

Exit codes: 0 a record, 1 the job never ran, 64 usage, 69 backend unavailable.`;
