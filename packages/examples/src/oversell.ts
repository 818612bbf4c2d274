import type { LockClient } from '@deadbolt/core';
import type { StockRegister } from './register.js';

export interface OversellRun {
  readonly orders: number;
  readonly sold: number;
  readonly oversold: number;
  readonly ms: number;
}

export interface OversellOptions {
  readonly stock: number;
  readonly orders: number;
  readonly concurrency: number;
  readonly register: StockRegister;
  /** With a client, each order runs under `withLock`; without, orders race (seed 002's 超卖). */
  readonly client?: LockClient;
  readonly lockKey?: string;
  readonly onOrderDone?: () => void;
}

/**
 * Seed 002's scenario: every order reads the stock, pauses as a real service would (a query, a
 * payment check), and writes stock - 1 if there was any. Without a lock, orders that read the same
 * value all sell the same item.
 */
export async function runOrders(options: OversellOptions): Promise<number> {
  let next = 0;
  let sold = 0;
  const sellOne = async (): Promise<boolean> => {
    const stock = await options.register.read();
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (stock <= 0) return false;
    await options.register.write(stock - 1);
    return true;
  };
  const worker = async (): Promise<void> => {
    while (next < options.orders) {
      next += 1;
      const ok = options.client
        ? await options.client.withLock(options.lockKey ?? 'demo:stock', sellOne, { waitMs: 120_000 })
        : await sellOne();
      if (ok) sold += 1;
      options.onOrderDone?.();
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, options.orders) }, worker));
  return sold;
}

export function summarize(stock: number, orders: number, sold: number, ms: number): OversellRun {
  return { orders, sold, oversold: Math.max(0, sold - stock), ms: Math.round(ms) };
}
