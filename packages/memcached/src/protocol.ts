import memjs from 'memjs';

/**
 * The few binary-protocol requests memjs's public API lacks: GET that returns the CAS id, and
 * DELETE / SET guarded by a CAS id (memcached binary protocol, "Request header": bytes 16..23 are
 * the CAS; a mismatch answers status 0x0002 "key exists", a missing key 0x0001 "not found").
 * Requests are built with memjs's own `Utils.makeRequestBuffer` and sent with `Client.perform`, so
 * they share memjs's connections, sharding, sequence numbers and timeouts.
 */
export const Opcode = Object.freeze({ get: 0x00, set: 0x01, add: 0x02, delete: 0x04 });
export const Status = Object.freeze({ ok: 0x0000, notFound: 0x0001, exists: 0x0002 });

/** A CAS id: 8 opaque bytes. */
export type Cas = Buffer;

export interface RawResponse {
  readonly status: number;
  readonly value: Buffer;
  readonly cas: Cas;
  /** A GET's extras: the item's 4-byte flags. */
  readonly extras: Buffer;
}

/** The memjs internals we rely on (stable since memjs 1.0; not in @types/memjs). */
interface PerformingClient {
  seq: number;
  incrSeq(): void;
  perform(
    key: string,
    request: Buffer,
    seq: number,
    callback: (error: Error | null, response: { header: { status: number; cas: Buffer }; val: Buffer; extras?: Buffer } | null) => void,
    retries?: number,
  ): void;
}

interface MemjsUtils {
  makeRequestBuffer(opcode: number, key: string, extras: Buffer | string, value: Buffer | string, opaque: number): Buffer;
}

const utils = (memjs as unknown as { Utils: MemjsUtils }).Utils;

/** Sends one request; resolves with the server's status, value and CAS. Rejects on I/O failure. */
export function request(
  client: unknown,
  opcode: number,
  key: string,
  extras: Buffer,
  value: Buffer | string,
  cas?: Cas,
): Promise<RawResponse> {
  const performer = client as PerformingClient;
  performer.incrSeq();
  const seq = performer.seq;
  const buffer = utils.makeRequestBuffer(opcode, key, extras, value, seq);
  if (cas !== undefined) cas.copy(buffer, 16, 0, 8);
  return new Promise((resolve, reject) => {
    performer.perform(key, buffer, seq, (error, response) => {
      if (error !== null || response === null) reject(error ?? new Error('memcached: no response'));
      else
        resolve({
          status: response.header.status,
          value: response.val,
          cas: Buffer.from(response.header.cas),
          extras: response.extras ?? Buffer.alloc(0),
        });
    });
  });
}

/** Flags (4 bytes) + expiration (4 bytes), the extras of SET and ADD. */
export function storeExtras(expirySeconds: number, flags = 0): Buffer {
  const extras = Buffer.alloc(8);
  extras.writeUInt32BE(flags >>> 0, 0);
  extras.writeUInt32BE(expirySeconds, 4);
  return extras;
}

/** GET with the CAS id. Undefined when the key is absent. */
export async function getWithCas(client: unknown, key: string): Promise<{ value: Buffer; cas: Cas } | undefined> {
  const response = await request(client, Opcode.get, key, Buffer.alloc(0), '');
  if (response.status === Status.notFound) return undefined;
  expectOk('GET', response.status);
  return { value: response.value, cas: response.cas };
}

/** ADD: stores only if absent. True when stored. */
export async function add(client: unknown, key: string, value: string, expirySeconds: number, flags = 0): Promise<boolean> {
  const response = await request(client, Opcode.add, key, storeExtras(expirySeconds, flags), value);
  if (response.status === Status.exists) return false;
  expectOk('ADD', response.status);
  return true;
}

/** GET with the CAS id and the item's flags. Undefined when the key is absent. */
export async function getWithFlags(client: unknown, key: string): Promise<{ value: Buffer; cas: Cas; flags: number } | undefined> {
  const response = await request(client, Opcode.get, key, Buffer.alloc(0), '');
  if (response.status === Status.notFound) return undefined;
  expectOk('GET', response.status);
  return { value: response.value, cas: response.cas, flags: response.extras.length >= 4 ? response.extras.readUInt32BE(0) : 0 };
}

/** ADD with flags, answering the stored item's CAS (what a later CAS-guarded DELETE or SET compares). Undefined: the key exists. */
export async function addReturningCas(
  client: unknown,
  key: string,
  value: string,
  expirySeconds: number,
  flags: number,
): Promise<Cas | undefined> {
  const response = await request(client, Opcode.add, key, storeExtras(expirySeconds, flags), value);
  if (response.status === Status.exists) return undefined;
  expectOk('ADD', response.status);
  return response.cas;
}

/** SET guarded by `cas`, answering the new CAS. Undefined: the item changed or vanished. */
export async function setIfCasReturning(
  client: unknown,
  key: string,
  value: string,
  expirySeconds: number,
  cas: Cas,
  flags: number,
): Promise<Cas | undefined> {
  const response = await request(client, Opcode.set, key, storeExtras(expirySeconds, flags), value, cas);
  if (response.status === Status.exists || response.status === Status.notFound) return undefined;
  expectOk('SET', response.status);
  return response.cas;
}

/** DELETE only if the item's CAS is still `cas`. False when it changed or vanished. */
export async function deleteIfCas(client: unknown, key: string, cas: Cas): Promise<boolean> {
  const response = await request(client, Opcode.delete, key, Buffer.alloc(0), '', cas);
  if (response.status === Status.exists || response.status === Status.notFound) return false;
  expectOk('DELETE', response.status);
  return true;
}

/** SET only if the item's CAS is still `cas` (a CAS-guarded store never creates a missing key). */
export async function setIfCas(
  client: unknown,
  key: string,
  value: Buffer | string,
  expirySeconds: number,
  cas: Cas,
  flags = 0,
): Promise<boolean> {
  const response = await request(client, Opcode.set, key, storeExtras(expirySeconds, flags), value, cas);
  if (response.status === Status.exists || response.status === Status.notFound) return false;
  expectOk('SET', response.status);
  return true;
}

function expectOk(operation: string, status: number): void {
  if (status !== Status.ok) throw new Error(`memcached ${operation} answered status 0x${status.toString(16).padStart(4, '0')}`);
}
