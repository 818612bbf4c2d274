/**
 * Every error Deadbolt throws. Each carries fields (key, backend, cause) as well as a message that
 * names the key, the backend and what to do, so logs are useful without a debugger. Messages never
 * contain credentials: backends are named by `LockBackend.name`, never by their URL.
 */

export interface ErrorContext {
  readonly key?: string | undefined;
  readonly backend?: string | undefined;
  readonly cause?: unknown;
}

function describe(context: ErrorContext): string {
  const parts: string[] = [];
  if (context.key !== undefined) parts.push(`key "${context.key}"`);
  if (context.backend !== undefined) parts.push(`backend ${context.backend}`);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

export class DeadboltError extends Error {
  readonly key: string | undefined;
  readonly backend: string | undefined;
  /** A stable, machine-readable name for the kind of failure. */
  readonly code: string = 'DEADBOLT_ERROR';

  constructor(message: string, context: ErrorContext = {}) {
    super(`${message}${describe(context)}`, context.cause === undefined ? undefined : { cause: context.cause });
    this.name = new.target.name;
    this.key = context.key;
    this.backend = context.backend;
  }
}

/** The lock was not acquired within `waitMs`. */
export class LockTimeoutError extends DeadboltError {
  override readonly code = 'LOCK_TIMEOUT';
  readonly waitMs: number;
  readonly attempts: number;

  constructor(context: ErrorContext & { waitMs: number; attempts: number }) {
    super(
      `lock not acquired within ${context.waitMs} ms after ${context.attempts} attempt(s); another owner holds it. ` +
        'Raise waitMs, or use tryAcquire() to give up at once',
      context,
    );
    this.waitMs = context.waitMs;
    this.attempts = context.attempts;
  }
}

/** The lock is no longer ours: its lease expired, its session ended, or someone else holds it now. */
export class LockLostError extends DeadboltError {
  override readonly code = 'LOCK_LOST';
  /** Why, without the prefix and advice: what a wrapping error quotes (never "lock lost: lock lost: ..."). */
  readonly reason: string;

  constructor(reason: string, context: ErrorContext = {}) {
    // A reason that quotes another loss (its message or a 'lock lost: ' prefix) is quoted bare.
    const quoted = context.cause instanceof LockLostError && reason === context.cause.message ? context.cause.reason : reason;
    const bare = quoted.replace(/^(?:lock lost: )+/i, '');
    super(`lock lost: ${bare}. Stop the protected work; acquire again if it must continue`, context);
    this.reason = bare;
  }
}

/** The lock handle was already released by this holder; it cannot be renewed or used again. */
export class LockReleasedError extends DeadboltError {
  override readonly code = 'LOCK_RELEASED';

  constructor(action: string, context: ErrorContext = {}) {
    super(`cannot ${action}: this lock handle was already released. Acquire the lock again`, context);
  }
}

/** The backend did not answer, or answered with an error, within the deadline. */
export class BackendUnavailableError extends DeadboltError {
  override readonly code = 'BACKEND_UNAVAILABLE';

  /** The cause's own words, without our prefix: what a wrapping error quotes. */
  readonly reason: string | undefined;

  constructor(action: string, context: ErrorContext = {}) {
    const cause = context.cause;
    // A wrapped BackendUnavailableError is quoted by its reason, not its message, so prefixes never repeat.
    const reason = cause instanceof BackendUnavailableError ? cause.reason : cause instanceof Error ? cause.message : undefined;
    super(
      `backend unavailable during ${action}${reason === undefined ? '' : `: ${reason}`}. Check that the server is up and reachable`,
      context,
    );
    this.reason = reason;
  }
}

/**
 * The server answered but refused the configuration: authentication failed, the database does not
 * exist. Not an outage, and retrying will not help: fix the URL or options. Never quotes a password.
 */
export class BackendConfigurationError extends DeadboltError {
  override readonly code = 'BACKEND_CONFIGURATION';

  constructor(problem: string, context: ErrorContext = {}) {
    super(`the server refused the configuration: ${problem}. Fix the URL or options (credentials, database name)`, context);
  }
}

/** Bad input: caught before any I/O. The message says what was wrong and what to do. */
export class InvalidArgumentError extends DeadboltError {
  override readonly code: string = 'INVALID_ARGUMENT';
  /** The option or argument that was wrong. */
  readonly argument: string;

  constructor(argument: string, problem: string, context: ErrorContext = {}) {
    super(`invalid ${argument}: ${problem}`, context);
    this.argument = argument;
  }
}

/** The client was closed; no new lock operations are accepted. */
export class ClientClosedError extends DeadboltError {
  override readonly code = 'CLIENT_CLOSED';

  constructor(context: ErrorContext = {}) {
    super('the lock client is closed. Create a new client with createLockClient()', context);
  }
}

/** The backend does not offer this primitive (see its capabilities); the message says what does. */
export class UnsupportedOperationError extends DeadboltError {
  override readonly code = 'UNSUPPORTED';
  readonly operation: string;

  constructor(operation: string, reason: string, context: ErrorContext = {}) {
    super(`${operation} is not supported: ${reason}`, context);
    this.operation = operation;
  }
}

/**
 * A write lock asked for by an owner that holds the read lock of the same key. Refused, as Curator
 * does: two readers upgrading at once would each wait for the other forever. Release the read lock
 * first, or take the write lock from the start (a write holder may take the read lock: downgrade).
 */
export class LockUpgradeError extends DeadboltError {
  override readonly code = 'LOCK_UPGRADE';

  constructor(context: ErrorContext = {}) {
    super(
      'cannot upgrade a read lock to a write lock: this owner holds the read lock. Release it first, or take the write lock from the start (downgrade is allowed)',
      context,
    );
  }
}
