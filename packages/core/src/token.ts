/**
 * The injection token of a LockClient, for dependency-injection containers (tsyringe's
 * `@inject(lockClientToken)`, NestJS's `@Inject(lockClientToken)`). `Symbol.for`, so two copies of
 * core (an ESM and a CommonJS load, a nested install) still agree on it.
 */
export const lockClientToken: unique symbol = Symbol.for('@deadbolt/core:LockClient');
