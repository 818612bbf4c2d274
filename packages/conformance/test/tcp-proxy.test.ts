import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startProxy, type TcpProxy } from '../src/servers/tcp-proxy.js';

/** An echo server that tags its replies, so a test can tell which server answered. */
async function echoServer(tag: string): Promise<{ server: Server; port: number; sockets: Set<Socket>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => socket.write(`${tag}:${chunk.toString()}`));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    sockets,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A client socket whose received text accumulates, with a wait for a given text or a deadline. */
async function connect(
  port: number,
): Promise<{ socket: Socket; received: () => string; waitFor(text: string, ms: number): Promise<boolean> }> {
  const socket = createConnection({ host: '127.0.0.1', port });
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  let text = '';
  const listeners = new Set<() => void>();
  socket.on('data', (chunk) => {
    text += chunk.toString();
    for (const l of listeners) l();
  });
  return {
    socket,
    received: () => text,
    // Resolves true as soon as `text` has arrived, false at the deadline: never a bare sleep.
    waitFor: (wanted, ms) =>
      new Promise<boolean>((resolve) => {
        const check = (): void => {
          if (text.includes(wanted)) finish(true);
        };
        const timer = setTimeout(() => finish(false), ms);
        function finish(value: boolean): void {
          clearTimeout(timer);
          listeners.delete(check);
          resolve(value);
        }
        listeners.add(check);
        check();
      }),
  };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(): Promise<{ a: Awaited<ReturnType<typeof echoServer>>; proxy: TcpProxy }> {
  const a = await echoServer('A');
  cleanups.push(a.close);
  const proxy = await startProxy('127.0.0.1', a.port);
  cleanups.push(proxy.close);
  return { a, proxy };
}

describe('TCP proxy (compare scenarios and session-kill tests)', () => {
  it('forwards both ways and rewrites a URL to itself', async () => {
    const { a, proxy } = await setup();
    const c = await connect(proxy.port);
    c.socket.write('hello');
    expect(await c.waitFor('A:hello', 5000)).toBe(true);
    expect(proxy.rewrite(`redis://127.0.0.1:${a.port}?mode=setnx`)).toBe(`redis://127.0.0.1:${proxy.port}?mode=setnx`);
    c.socket.destroy();
  });

  it('partition stalls existing and new connections; heal delivers what was sent', async () => {
    const { proxy } = await setup();
    const before = await connect(proxy.port);
    before.socket.write('one');
    expect(await before.waitFor('A:one', 5000)).toBe(true);
    proxy.partition();
    before.socket.write('two');
    const during = await connect(proxy.port); // accepted, but nothing reaches the server
    during.socket.write('three');
    expect(await before.waitFor('A:two', 500)).toBe(false);
    expect(await during.waitFor('A:three', 100)).toBe(false);
    expect(before.socket.destroyed || during.socket.destroyed).toBe(false);
    proxy.heal();
    expect(await before.waitFor('A:two', 5000)).toBe(true);
    expect(await during.waitFor('A:three', 5000)).toBe(true);
    before.socket.destroy();
    during.socket.destroy();
  });

  it('a server-side close during a partition reaches the client only at heal', async () => {
    const { a, proxy } = await setup();
    const c = await connect(proxy.port);
    c.socket.write('x');
    expect(await c.waitFor('A:x', 5000)).toBe(true);
    proxy.partition();
    for (const s of a.sockets) s.destroy();
    const closed = once(c.socket, 'close');
    const early = await Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);
    expect(early).toBe(false);
    proxy.heal();
    await closed;
  });

  it('strand silences the connections open now for good, both ways and closes included, while new ones are forwarded', async () => {
    const { a, proxy } = await setup();
    const old = await connect(proxy.port);
    old.socket.write('one');
    expect(await old.waitFor('A:one', 5000)).toBe(true);
    proxy.strand();
    old.socket.write('two');
    const fresh = await connect(proxy.port);
    fresh.socket.write('three');
    expect(await fresh.waitFor('A:three', 5000)).toBe(true);
    // The server closing its end of the stranded connection is not passed on either.
    for (const s of a.sockets) s.destroy();
    expect(await old.waitFor('A:two', 300)).toBe(false);
    expect(old.socket.destroyed).toBe(false);
    old.socket.destroy();
    fresh.socket.destroy();
  });

  it('cut closes every connection and refuses new ones until heal', async () => {
    const { a, proxy } = await setup();
    const c = await connect(proxy.port);
    c.socket.write('k');
    expect(await c.waitFor('A:k', 5000)).toBe(true);
    const clientClosed = once(c.socket, 'close');
    const upstreamClosed = Promise.all([...a.sockets].map((s) => once(s, 'close')));
    proxy.cut();
    await Promise.all([clientClosed, upstreamClosed]);
    // Accepted by the kernel, then closed at once without a byte forwarded.
    const refused = createConnection({ host: '127.0.0.1', port: proxy.port });
    refused.on('error', () => undefined);
    await once(refused, 'close');
    expect(a.sockets.size).toBe(0);
    proxy.heal();
    const again = await connect(proxy.port);
    again.socket.write('m');
    expect(await again.waitFor('A:m', 5000)).toBe(true);
    again.socket.destroy();
  });

  it('retarget drops existing connections and sends new ones to the new target', async () => {
    const { proxy } = await setup();
    const b = await echoServer('B');
    cleanups.push(b.close);
    const old = await connect(proxy.port);
    old.socket.write('p');
    expect(await old.waitFor('A:p', 5000)).toBe(true);
    const oldClosed = once(old.socket, 'close');
    proxy.retarget('127.0.0.1', b.port);
    await oldClosed;
    const fresh = await connect(proxy.port);
    fresh.socket.write('q');
    expect(await fresh.waitFor('B:q', 5000)).toBe(true);
    fresh.socket.destroy();
  });

  it('close ends every connection, on both sides, and the listener', async () => {
    const { a, proxy } = await setup();
    const c = await connect(proxy.port);
    c.socket.write('z');
    expect(await c.waitFor('A:z', 5000)).toBe(true);
    proxy.partition(); // a partitioned link must not survive close() either
    const clientClosed = once(c.socket, 'close');
    // The upstream side goes too: the echo server sees its connection close.
    expect(a.sockets.size).toBe(1);
    const upstreamClosed = Promise.all([...a.sockets].map((s) => once(s, 'close')));
    await proxy.close();
    await Promise.all([clientClosed, upstreamClosed]);
    expect(proxy.connections).toBe(0);
    expect(a.sockets.size).toBe(0);
    const refused = createConnection({ host: '127.0.0.1', port: proxy.port });
    const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
  });
});
