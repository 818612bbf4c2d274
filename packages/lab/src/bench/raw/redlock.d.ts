// node-redlock 5's package.json "exports" hides its own typings from NodeNext resolution; this
// declares the little of its API the benchmark uses.
declare module 'redlock' {
  import type { Redis } from 'ioredis';
  export interface Lock {
    release(): Promise<unknown>;
  }
  export default class Redlock {
    constructor(clients: Iterable<Redis>, settings?: Record<string, unknown>);
    acquire(resources: string[], duration: number): Promise<Lock>;
    on(event: 'error', listener: (error: unknown) => void): this;
  }
}
