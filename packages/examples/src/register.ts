import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The protected resource of the demo: a stock counter read and written in two separate steps, as
 * an application reading a row and writing it back would. Nothing about it is atomic; that is the point.
 */
export interface StockRegister {
  read(): Promise<number>;
  write(value: number): Promise<void>;
}

export class MemoryRegister implements StockRegister {
  constructor(private value: number) {}

  async read(): Promise<number> {
    return this.value;
  }

  async write(value: number): Promise<void> {
    this.value = value;
  }
}

/** A register several processes share: a file, replaced atomically by rename so reads never see half a write. */
export class FileRegister implements StockRegister {
  constructor(readonly path: string) {}

  static create(initial: number): FileRegister {
    const dir = mkdtempSync(join(tmpdir(), 'deadbolt-demo-'));
    const register = new FileRegister(join(dir, 'stock'));
    writeFileSync(register.path, String(initial));
    return register;
  }

  async read(): Promise<number> {
    return Number(readFileSync(this.path, 'utf8'));
  }

  async write(value: number): Promise<void> {
    const temporary = `${this.path}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    writeFileSync(temporary, String(value));
    renameSync(temporary, this.path);
  }

  remove(): void {
    rmSync(join(this.path, '..'), { recursive: true, force: true });
  }
}
