import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { Etcd3 } from 'etcd3';

/** `etcd://[u:p@]h:p,h:p` to the `host:port,...` that etcdctl's --endpoints takes. */
export function endpointsOf(url: string): string {
  return url
    .replace(/^etcds?:\/\//, '')
    .replace(/^[^@/]*@/, '')
    .replace(/[/?].*$/, '');
}

/** A plain etcd3 client on the same server, to look at what the adapter wrote (as the URL's user, if any). */
export function rawClient(url: string): Etcd3 {
  const credentials = /^etcds?:\/\/([^:@/]+):([^@/]+)@/.exec(url);
  return new Etcd3({
    hosts: endpointsOf(url)
      .split(',')
      .map((hostPort) => `http://${hostPort}`),
    ...(credentials
      ? { auth: { username: decodeURIComponent(credentials[1] ?? ''), password: decodeURIComponent(credentials[2] ?? '') } }
      : {}),
  });
}

/** Runs etcdctl to completion (e.g. to set up users), rejecting with its output when it fails. */
export function runEtcdctl(url: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      '/usr/bin/etcdctl',
      [`--endpoints=${endpointsOf(url)}`, ...args],
      { env: { ...process.env, ETCDCTL_API: '3' } },
      (error, stdout, stderr) => (error ? reject(new Error(`etcdctl ${args[0]} failed: ${stderr}`)) : resolve(stdout)),
    );
  });
}

/** Every key under `prefix` with its create_revision and value, oldest first. */
export async function contenders(raw: Etcd3, prefix: string): Promise<{ key: string; revision: number; value: string }[]> {
  const response = await raw.getAll().prefix(prefix).sort('Create', 'Ascend').exec();
  return response.kvs.map((kv) => ({ key: kv.key.toString(), revision: Number(kv.create_revision), value: kv.value.toString() }));
}

/** A running etcdctl whose stdout is collected; `printed(pattern)` resolves when it appears. */
export interface Etcdctl {
  readonly child: ChildProcess;
  output(): string;
  printed(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited(): Promise<number | null>;
}

export function etcdctl(url: string, args: readonly string[]): Etcdctl {
  const child = spawn('/usr/bin/etcdctl', [`--endpoints=${endpointsOf(url)}`, ...args], {
    env: { ...process.env, ETCDCTL_API: '3' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters = new Set<() => void>();
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const waiter of waiters) waiter();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    printed(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(out);
          if (match === null) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(match[0]);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`etcdctl ${args.join(' ')} did not print ${pattern} within ${timeoutMs} ms; it printed: ${out}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    exited: () => exit,
  };
}
