/** Where a command writes: injected so the commands run the same in the bin and under test. */
export interface Io {
  readonly stdout: NodeJS.WritableStream & { readonly isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { readonly isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
}

/**
 * Every line deadbolt prints goes through here, so no secret of the backend URL can reach a
 * terminal or a log, whoever wrote the message (us, core, an adapter, a driver).
 */
export class Output {
  private secrets: readonly string[] = [];

  constructor(private readonly io: Io) {}

  /** Secrets to mask from now on (the backend URL's password and token-like query values). */
  hide(secrets: readonly string[]): void {
    this.secrets = [...secrets].sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    let shown = text;
    for (const secret of this.secrets) shown = shown.split(secret).join('***');
    return shown;
  }

  /** A line of data on stdout. */
  data(line: string): void {
    this.io.stdout.write(`${this.redact(line)}\n`);
  }

  /** An error on stderr, `deadbolt: ` first, red on a terminal. */
  error(message: string): void {
    this.io.stderr.write(`${this.paint('31', 'deadbolt:')} ${this.redact(message)}\n`);
  }

  /** Plain text on stderr (a usage line, a hint). */
  note(text: string): void {
    this.io.stderr.write(`${this.redact(text)}\n`);
  }

  /** Help text on stdout. */
  help(text: string): void {
    this.io.stdout.write(`${this.redact(text)}\n`);
  }

  /** Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
  private paint(code: string, text: string): string {
    const noColor = this.io.env.NO_COLOR !== undefined && this.io.env.NO_COLOR !== '';
    return this.io.stderr.isTTY === true && !noColor ? `\u001b[${code}m${text}\u001b[0m` : text;
  }
}
