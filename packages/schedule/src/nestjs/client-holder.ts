import type { LockClient } from '@deadbolt/core';

/**
 * The LockClient of this process's DeadboltScheduleModule, for @RunOnce: a method decorator cannot
 * take an injected value, and Nest's scheduler calls the method itself. One module per process.
 */
let current: LockClient | undefined;

export function holdClient(client: LockClient | undefined): void {
  current = client;
}

export function heldClient(): LockClient | undefined {
  return current;
}
