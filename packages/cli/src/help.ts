/** The usage lines and --help texts. Exit codes are listed once, in the top-level help. */

export const runUsage = 'usage: deadbolt run <key> [--url URL] [--ttl ms] [--wait ms] [--grace ms] -- <command> [args...]';
export const leaderUsage = 'usage: deadbolt leader <name> [--url URL] [--watch [--interval ms]] [--json]';
export const mainUsage = 'usage: deadbolt <run|leader> ... | deadbolt --help | deadbolt --version';

export const defaults = Object.freeze({ ttlMs: 30_000, waitMs: 10_000, graceMs: 5_000, intervalMs: 1_000 });

export const mainHelp = `${mainUsage}

Distributed locks for operators, over Redis, PostgreSQL, ZooKeeper or Memcached.

Commands:
  run <key> -- <command...>   run a command while holding the lock <key>
  leader <name>               print who leads the election <name>

The backend is --url URL, or DEADBOLT_URL when --url is not given: redis://host:6379,
postgres://user:password@host:5432/db, zookeeper://host:2181, memcached://host:11211. Its adapter
package (@deadbolt/redis, @deadbolt/postgres, @deadbolt/zookeeper, @deadbolt/memcached) must be
installed beside @deadbolt/cli. memory:// is refused: it cannot be shared between processes.

Exit codes:
  0    done (run: the command's own code; a command killed by a signal: 128 + its number)
  1    leader: there is no leader
  64   usage error; nothing was contacted
  69   the backend is unavailable (did not answer, or refused us)
  75   run: the lock stayed busy for all of --wait
  78   configuration: adapter package not installed, the server refused the URL's settings,
       or the backend cannot do it (leader on memcached)
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

--watch prints a line at every change of leader (an empty line, or "leader": null with --json,
when the election has none) until interrupted. It polls the backend every --interval ms: a change
shorter than the interval can go unseen. A later version will follow changes as they happen.

Options:
  --url URL        the backend (default: DEADBOLT_URL)
  --json           print {"leader": "<id>" | null, "at": "<ISO 8601 time>"} lines instead of bare ids
  --watch          keep printing changes until interrupted (SIGINT/SIGTERM: exit 0)
  --interval ms    --watch's polling interval (default ${defaults.intervalMs})
  -h, --help       this text

Exit codes: 0 a leader was printed (--watch: interrupted), 1 no leader, 64 usage, 69 backend
unavailable, 78 configuration.`;
