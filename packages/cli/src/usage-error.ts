/** A bad command line: reported with the command's usage line, exit 64, before anything is contacted. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The usage line of the command that was being parsed. */
    readonly usage: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}
