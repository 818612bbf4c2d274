export { DeadlineExceededError, withDeadline } from '@deadbolt/core/adapter';
