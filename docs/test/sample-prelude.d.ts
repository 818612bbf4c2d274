// What the documentation's samples take from the application around them: its own functions and
// values, declared here so each sample compiles as the snippet of a real program it is.
declare const signal: AbortSignal;
declare const log: { info(message: string): void; warn(message: string): void; error(message: string): void };
declare function chargeCard(options: { signal: AbortSignal; fence: number | undefined }): Promise<void>;
declare function buildReport(options: { signal: AbortSignal; fence: number | undefined }): Promise<string>;
declare function runScheduler(options: { signal: AbortSignal; term: number }): Promise<void>;
declare function writeReport(report: string, options: { fence: number | undefined }): Promise<void>;
declare function readDocument(id: string): Promise<string>;
declare function saveDocument(id: string, text: string): Promise<void>;
declare function callApi(): Promise<void>;
declare const locks: import('@deadbolt/core').LockClient;
declare const lock: import('@deadbolt/core').Lock;
declare const pool: import('pg').Pool;
declare const client: import('pg').PoolClient;
declare const redis: import('ioredis').Redis;
