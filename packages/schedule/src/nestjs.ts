/** `@deadbolt/schedule/nestjs`: @RunOnce for `@nestjs/schedule`'s @Cron, and the module that provides the LockClient. */
export { InjectLockClient, LOCK_CLIENT, DeadboltScheduleModule, type DeadboltScheduleOptions } from './nestjs/module.js';
export { RunOnce } from './nestjs/run-once.js';
