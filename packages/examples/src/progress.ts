/** A one-line progress bar on stderr; silent when stderr is not a terminal (CI logs, --json pipes). */
export class ProgressBar {
  private done = 0;
  private readonly enabled = process.stderr.isTTY === true;

  constructor(
    private readonly label: string,
    private readonly total: number,
  ) {
    this.draw();
  }

  tick(count = 1): void {
    this.done += count;
    if (this.done === this.total || this.done % Math.max(1, Math.floor(this.total / 50)) === 0) this.draw();
  }

  finish(): void {
    if (this.enabled) process.stderr.write('\r\x1b[K');
  }

  private draw(): void {
    if (!this.enabled) return;
    const width = 30;
    const filled = Math.round((this.done / Math.max(1, this.total)) * width);
    process.stderr.write(`\r${this.label.padEnd(14)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${this.done}/${this.total}`);
  }
}
