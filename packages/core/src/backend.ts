/**
 * A thin re-export of the contract's request types, kept for the adapter kit's server queue
 * (adapter/server-queue*.ts), which imports them from here. The contract lives in contract/:
 * new code imports from there, and this file goes once those imports point there too.
 */
export type { AcquireRequest, Grant } from './contract/requests.js';
