/**
 * `@deadbolt/fence`: fencing checked where the data lives. A lease lock cannot stop a holder that
 * stalls past its lease from waking up and writing; the store can, by refusing a fence smaller than
 * one it has already seen. `@deadbolt/fence/postgres` and `@deadbolt/fence/redis` do it in those
 * stores; this entry point has the error, the guard interface for any other store, and the HTTP
 * header convention.
 */
export { StaleFenceError } from './errors.js';
export { createMemoryFenceGuard, fencedWrite, type FenceAdmission, type FenceGuard } from './guard.js';
export { fenceHeader, parseFenceHeader } from './http.js';
