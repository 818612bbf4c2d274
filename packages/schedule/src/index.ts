/**
 * `@deadbolt/schedule`: a job that every replica schedules runs once per tick. The schedulers'
 * integrations live in their own entry points (`/node-cron`, `/cron`, `/croner`, `/nestjs`), so an
 * application loads only the scheduler it uses.
 */
export type { TickOptions, TickSkip } from './options.js';
export { runTick, tickBefore, type TickContext, type TickJob } from './tick.js';
