import { chooseProvider, readyOrStop, startAllOrNone, stopAll } from './choose.js';
import { ContainerServer } from './container-server.js';
import { createNetwork } from './network.js';
import { freePort, freePorts } from './ports.js';
import { probeZooKeeper, zooKeeperMode } from './probes.js';
import { waitUntilReady } from './ready.js';
import type { ProcessServer } from './process-server.js';
import { zooKeeperProcess } from './zookeeper-process.js';
import type { ServerHandle, ZooKeeperEnsemble, ZooKeeperStartOptions } from './types.js';

const defaultReadyMs = 60_000;
const defaultTickTimeMs = 2_000;

function containerEnvironment(options: ZooKeeperStartOptions | undefined): Record<string, string> {
  return {
    ZOO_TICK_TIME: String(options?.tickTimeMs ?? defaultTickTimeMs),
    ZOO_ADMINSERVER_ENABLED: 'false',
    ZOO_4LW_COMMANDS_WHITELIST: '*',
  };
}

/** A standalone ZooKeeper (its data directory survives restart() and up()). */
export async function startZooKeeper(options?: ZooKeeperStartOptions): Promise<ServerHandle> {
  const readyTimeoutMs = options?.readyTimeoutMs ?? defaultReadyMs;
  if ((await chooseProvider(options)) === 'container') {
    const server = await ContainerServer.create({
      kind: 'zookeeper',
      image: 'zookeeper:3.8',
      containerPort: 2181,
      environment: containerEnvironment(options),
      url: (host, port) => `zookeeper://${host}:${port}`,
      probe: probeZooKeeper,
      readyTimeoutMs,
    });
    return readyOrStop(server);
  }
  const server = zooKeeperProcess({
    clientPort: await freePort(),
    tickTimeMs: options?.tickTimeMs ?? defaultTickTimeMs,
    readyTimeoutMs,
  });
  return readyOrStop(server);
}

/**
 * An ensemble of `size` (odd, default 3) members, returned once each is leader or follower.
 * Containers reach each other by alias (zoo1, zoo2, ...) on a user network; processes on loopback
 * ports. A member's up() waits until it has rejoined the quorum.
 */
export async function startZooKeeperEnsemble(size = 3, options?: ZooKeeperStartOptions): Promise<ZooKeeperEnsemble> {
  if (!Number.isInteger(size) || size < 1) throw new Error(`startZooKeeperEnsemble: size must be a positive integer, not ${size}`);
  const readyTimeoutMs = options?.readyTimeoutMs ?? defaultReadyMs;
  const ids = Array.from({ length: size }, (_, index) => index + 1);
  let cleanup = async (): Promise<void> => undefined;
  let members: (ContainerServer | ProcessServer)[];
  if ((await chooseProvider(options)) === 'container') {
    const owned = await createNetwork();
    cleanup = owned.remove;
    const servers = ids.map((id) => `server.${id}=zoo${id}:2888:3888;2181`).join(' ');
    try {
      members = await startAllOrNone(
        ids.map((id) =>
          ContainerServer.create({
            kind: 'zookeeper',
            image: 'zookeeper:3.8',
            containerPort: 2181,
            environment: { ...containerEnvironment(options), ZOO_MY_ID: String(id), ZOO_SERVERS: servers },
            network: { network: owned.network, alias: `zoo${id}` },
            url: (host, port) => `zookeeper://${host}:${port}`,
            probe: probeZooKeeper,
            readyTimeoutMs,
          }),
        ),
      );
    } catch (error) {
      await cleanup();
      throw error;
    }
  } else {
    const ports = await freePorts(size * 3);
    const at = (index: number): number => ports[index] ?? 0;
    const quorum = ids.map((id) => ({ id, host: '127.0.0.1', quorumPort: at(size + id - 1), electionPort: at(2 * size + id - 1) }));
    members = [];
    try {
      for (const id of ids) {
        members.push(
          zooKeeperProcess({
            clientPort: at(id - 1),
            tickTimeMs: options?.tickTimeMs ?? defaultTickTimeMs,
            readyTimeoutMs,
            quorum: { myId: id, members: quorum },
          }),
        );
      }
    } catch (error) {
      await stopAll(members);
      throw error;
    }
  }
  try {
    await Promise.all(members.map((member) => member.waitReady()));
  } catch (error) {
    await stopAll(members).finally(cleanup);
    throw error;
  }
  return ensemble(members, cleanup);
}

function ensemble(members: readonly ServerHandle[], cleanup: () => Promise<void>): ZooKeeperEnsemble {
  const connectString = members.map((member) => `${member.host}:${member.port}`).join(',');
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= stopAll(members).finally(cleanup);
    return stopping;
  };
  return {
    members,
    connectString,
    url: `zookeeper://${connectString}`,
    async leader(options) {
      let found: ServerHandle | undefined;
      await waitUntilReady(
        async (timeoutMs) => {
          const modes = await Promise.all(members.map((member) => zooKeeperMode(member.host, member.port, timeoutMs)));
          found = members[modes.indexOf('leader')];
          return found !== undefined;
        },
        { what: `a leader in the ZooKeeper ensemble ${connectString}`, timeoutMs: options?.timeoutMs ?? 30_000 },
      );
      if (found === undefined) throw new Error(`no leader in ${connectString}`);
      return found;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
