import {
  GenericContainer,
  getContainerRuntimeClient,
  type StartedNetwork,
  type StartedTestContainer,
  type WaitStrategy,
} from 'testcontainers';
import { trackContainer, untrackContainer } from './exit-cleanup.js';
import { kernelPickedPort } from './ports.js';
import { waitUntilReady } from './ready.js';
import type { ServerHandle, ServerKind } from './types.js';

/** Everything needed to run one server image. */
export interface ContainerServerSpec {
  readonly kind: ServerKind;
  readonly image: string;
  readonly containerPort: number;
  readonly command?: readonly string[];
  readonly environment?: Readonly<Record<string, string>>;
  /** testcontainers' own wait on first start (e.g. postgres' log line, which appears twice). */
  readonly waitStrategy?: WaitStrategy;
  /** Join a user network under this alias (replication and ensembles reach each other by name). */
  readonly network?: { readonly network: StartedNetwork; readonly alias: string };
  /** Builds the url from the host and the fixed host port. */
  readonly url: (host: string, port: number) => string;
  /** Answers true once the server serves its protocol at host:port. */
  readonly probe: (host: string, port: number, timeoutMs: number) => Promise<boolean>;
  readonly readyTimeoutMs: number;
}

type State = 'up' | 'paused' | 'down' | 'stopped';

/** Seconds the runtime waits after SIGTERM before SIGKILL on down()/restart(). */
const stopGraceSeconds = 10;

/**
 * A server in a container started by testcontainers. The host port is picked free by us and
 * bound explicitly, so a stopped and restarted container comes back on the same address
 * (a dynamically mapped port would change). Faults go through the runtime API: stop/start,
 * pause/unpause (the cgroup freezer).
 */
export class ContainerServer implements ServerHandle {
  readonly provider = 'container' as const;
  readonly kind: ServerKind;
  private state: State = 'up';
  private stopping: Promise<void> | undefined;

  private constructor(
    private readonly spec: ContainerServerSpec,
    private readonly started: StartedTestContainer,
    readonly host: string,
    readonly port: number,
  ) {
    this.kind = spec.kind;
  }

  get url(): string {
    return this.spec.url(this.host, this.port);
  }

  /** The container's id (for `podman logs` when a test fails). */
  get containerId(): string {
    return this.started.getId();
  }

  /** Starts the container; does not wait for the protocol (see waitReady). */
  static async create(spec: ContainerServerSpec): Promise<ContainerServer> {
    const port = await kernelPickedPort('0.0.0.0');
    let container = new GenericContainer(spec.image)
      .withExposedPorts({ container: spec.containerPort, host: port })
      .withLabels({ 'deadbolt.kind': spec.kind, 'deadbolt.owner-pid': String(process.pid) })
      .withStartupTimeout(spec.readyTimeoutMs);
    if (spec.command !== undefined) container = container.withCommand([...spec.command]);
    if (spec.environment !== undefined) container = container.withEnvironment({ ...spec.environment });
    if (spec.waitStrategy !== undefined) container = container.withWaitStrategy(spec.waitStrategy);
    if (spec.network !== undefined) container = container.withNetwork(spec.network.network).withNetworkAliases(spec.network.alias);
    const started = await container.start();
    trackContainer(started.getId());
    return new ContainerServer(spec, started, started.getHost(), port);
  }

  async waitReady(): Promise<void> {
    await waitUntilReady((timeoutMs) => this.spec.probe(this.host, this.port, timeoutMs), {
      what: this.describe(),
      timeoutMs: this.spec.readyTimeoutMs,
      failed: () => (this.state === 'stopped' ? 'stopped' : undefined),
      diagnostics: () => this.logTail(),
    });
  }

  async pause(): Promise<void> {
    if (this.state === 'paused') return;
    this.require('up', 'pause');
    await (await this.container()).pause();
    this.state = 'paused';
  }

  async resume(): Promise<void> {
    if (this.state !== 'paused') return;
    await (await this.container()).unpause();
    this.state = 'up';
  }

  async down(): Promise<void> {
    if (this.state === 'down' || this.state === 'stopped') return;
    const container = await this.container();
    if (this.state === 'paused') await container.unpause();
    await container.stop({ t: stopGraceSeconds });
    this.state = 'down';
  }

  async up(): Promise<void> {
    if (this.state === 'up' || this.state === 'paused') return;
    this.require('down', 'start');
    await (await this.container()).start();
    this.state = 'up';
    await this.waitReady();
  }

  async restart(): Promise<void> {
    await this.down();
    await this.up();
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.state = 'stopped';
      // force: kills a running or paused container; v: its anonymous volumes go too.
      await (await this.container()).remove({ force: true, v: true });
      untrackContainer(this.started.getId());
    })();
    return this.stopping;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  describe(): string {
    return `${this.kind} (container ${this.spec.image} ${this.started.getId().slice(0, 12)}) on ${this.host}:${this.port}`;
  }

  private async container(): Promise<import('dockerode').Container> {
    const client = await getContainerRuntimeClient();
    return client.container.getById(this.started.getId());
  }

  private require(state: State, action: string): void {
    if (this.state !== state) throw new Error(`cannot ${action} ${this.describe()}: it is ${this.state}`);
  }

  private async logTail(): Promise<string> {
    const logs = await (await this.container()).logs({ stdout: true, stderr: true, tail: 30 });
    return demultiplex(logs);
  }
}

/**
 * Docker's log stream without a TTY is framed: [stream, 0, 0, 0, size (uint32 BE)] + payload
 * (Docker Engine API, "Attach to a container", stream format). Falls back to the raw text.
 */
function demultiplex(raw: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length) {
    const stream = raw[offset];
    if (stream === undefined || stream > 2 || raw.readUIntBE(offset + 1, 3) !== 0) return raw.toString('utf8');
    const size = raw.readUInt32BE(offset + 4);
    parts.push(raw.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}
