import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLockClient, InvalidArgumentError, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryFenceGuard, fencedWrite, fenceHeader, parseFenceHeader, StaleFenceError } from '../src/index.js';

/**
 * The README's worked example: a service that owns its documents puts a FenceGuard in front of
 * its writes and refuses a stale Deadbolt-Fence header with 409. Its clients are lock holders.
 */
function documentService(): { server: Server; documents: Map<string, string> } {
  const documents = new Map<string, string>();
  const guard = createMemoryFenceGuard();
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const reply = (status: number, body?: object): void => {
      response.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' }).end(body && JSON.stringify(body));
    };
    try {
      const id = decodeURIComponent(new URL(request.url ?? '/', 'http://service').pathname.slice('/documents/'.length));
      if (request.method !== 'PUT' || id === '') return reply(404);
      const fence = parseFenceHeader(request.headers[fenceHeader.toLowerCase()]);
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      await fencedWrite(guard, id, fence, () => documents.set(id, Buffer.concat(chunks).toString('utf8')));
      reply(204);
    } catch (error) {
      if (error instanceof StaleFenceError) return reply(409, { error: error.code, fence: error.fence, newerFence: error.newerFence });
      if (error instanceof InvalidArgumentError) return reply(400, { error: error.code, message: error.message });
      reply(500);
    }
  });
  return { server, documents };
}

/** A client of the service: writes a document with its lock's fence. */
async function putDocument(base: string, id: string, body: string, fence: number | undefined): Promise<Response> {
  return fetch(`${base}/documents/${encodeURIComponent(id)}`, {
    method: 'PUT',
    headers: fence === undefined ? {} : { [fenceHeader]: String(fence) },
    body,
  });
}

let service: ReturnType<typeof documentService>;
let base: string;
let locks: LockClient;

beforeAll(async () => {
  service = documentService();
  service.server.listen(0, '127.0.0.1');
  await once(service.server, 'listening');
  base = `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`;
  locks = createLockClient('memory://');
});
afterAll(async () => {
  await locks?.close();
  service.server.closeAllConnections();
  service.server.close();
  await once(service.server, 'close');
});

describe('an HTTP service that refuses a stale Deadbolt-Fence header', () => {
  it('a holder whose lease ran out while it stalled is answered 409; the newer holder keeps its document', async () => {
    const a = await locks.acquire('doc:1', { owner: 'a', ttlMs: 50, autoRenew: false });
    // A stalls without renewing; B waits for the lease to run out and takes the lock.
    const b = await locks.acquire('doc:1', { owner: 'b', ttlMs: 30_000, waitMs: 30_000 });
    expect(b.fence).toBeGreaterThan(a.fence!);
    expect((await putDocument(base, 'doc:1', 'from b', b.fence)).status).toBe(204);
    const late = await putDocument(base, 'doc:1', 'from a', a.fence);
    expect(late.status).toBe(409);
    expect(await late.json()).toEqual({ error: 'STALE_FENCE', fence: a.fence, newerFence: b.fence });
    expect(service.documents.get('doc:1')).toBe('from b');
    await b.release();
  });

  it('a request without the header, or with one that is not a fence, is answered 400 and writes nothing', async () => {
    expect((await putDocument(base, 'doc:2', 'x', undefined)).status).toBe(400);
    const response = await fetch(`${base}/documents/doc%3A2`, { method: 'PUT', headers: { [fenceHeader]: '1e3' }, body: 'x' });
    expect(response.status).toBe(400);
    expect(service.documents.has('doc:2')).toBe(false);
  });
});

describe('the in-memory FenceGuard', () => {
  it('holds the resource while an admitted write runs: a newer admission waits for it, so writes land in fence order', async () => {
    const guard = createMemoryFenceGuard();
    const landed: number[] = [];
    let finishFirst!: () => void;
    const firstRunning = new Promise<void>((resolve) => {
      const first = fencedWrite(guard, 'r', 1, async () => {
        resolve();
        await new Promise<void>((done) => (finishFirst = done));
        landed.push(1);
      });
      void first;
    });
    await firstRunning;
    const second = fencedWrite(guard, 'r', 2, () => landed.push(2));
    const stale = fencedWrite(guard, 'r', 1, () => landed.push(-1)).catch((error: unknown) => error);
    await Promise.resolve();
    expect(landed).toEqual([]);
    finishFirst();
    await second;
    expect(await stale).toBeInstanceOf(StaleFenceError);
    expect(landed).toEqual([1, 2]);
  });

  it('releases the resource when the write throws, and other resources never wait', async () => {
    const guard = createMemoryFenceGuard();
    await expect(
      fencedWrite(guard, 'r', 3, () => {
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    const held = await guard.admit('r', 3);
    expect(await fencedWrite(guard, 'other', 1, () => 'written')).toBe('written');
    held.release();
    held.release();
    await expect(guard.admit('r', 2)).rejects.toMatchObject({ fence: 2, newerFence: 3 });
    await using again = await guard.admit('r', 4);
    expect(again.fence).toBe(4);
  });
});
