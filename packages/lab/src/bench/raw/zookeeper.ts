import zookeeper, { type Client, type Exception } from 'node-zookeeper-client';
import type { Mutex } from '../subject.js';

const root = '/bench-raw';

/** Parents created so far in this process, so that mkdirp happens once per key, not per cycle. */
const parents = new Map<string, Promise<void>>();

function call<T>(run: (done: (error: Error | Exception | null, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) =>
    run((error, value) => (error ? reject(error instanceof Error ? error : new Error(error.toString())) : resolve(value))),
  );
}

const sequence = (name: string): number => Number(name.slice(name.lastIndexOf('-') + 1));

/**
 * The bare ZooKeeper lock recipe (https://zookeeper.apache.org/doc/current/recipes.html#sc_recipes_Locks)
 * on node-zookeeper-client, one session per client: create an EPHEMERAL_SEQUENTIAL child under
 * /bench-raw/<key>, list the children, the lowest sequence holds the lock; otherwise set a watch
 * with exists() on the next lower child only (no herd) and look again when it goes. Release
 * deletes the own child. The parent is created once (mkdirp), outside the cycles' cost after the first.
 */
export async function openRawZooKeeper(url: string): Promise<Mutex> {
  const { host } = new URL(url); // host includes the port
  const client: Client = zookeeper.createClient(host, { sessionTimeout: 10_000, retries: 0 });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`raw zookeeper: no session with ${host} within 10 s`)), 10_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.connect();
  });

  const parentOf = (key: string): Promise<void> => {
    const id = `${host}${root}/${key}`;
    let made = parents.get(id);
    if (!made) {
      made = call<string>((done) => client.mkdirp(`${root}/${key}`, done)).then(() => undefined);
      parents.set(id, made);
      made.catch(() => parents.delete(id));
    }
    return made;
  };

  return {
    async acquire(key) {
      const parent = `${root}/${key}`;
      await parentOf(key);
      const path = await call<string>((done) => client.create(`${parent}/lock-`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done));
      const mine = path.slice(parent.length + 1);
      for (;;) {
        const children = (await call<string[]>((done) => client.getChildren(parent, done))).sort((a, b) => sequence(a) - sequence(b));
        const index = children.indexOf(mine);
        if (index === 0) break;
        if (index < 0) throw new Error(`raw zookeeper: own node ${path} vanished`);
        const predecessor = `${parent}/${children[index - 1]!}`;
        // exists() with a watch: resolves when the predecessor is deleted, or at once if it is already gone.
        await new Promise<void>((resolve, reject) => {
          client.exists(
            predecessor,
            () => resolve(),
            (error, stat) => {
              if (error) reject(error instanceof Error ? error : new Error(error.toString()));
              else if (!stat) resolve();
            },
          );
        });
      }
      return async () => {
        await call<void>((done) => client.remove(path, -1, (error) => done(error, undefined)));
      };
    },
    async close() {
      client.close();
    },
  };
}
