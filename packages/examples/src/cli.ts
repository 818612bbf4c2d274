#!/usr/bin/env node
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLockClient } from '@deadbolt/core';
import { redactUrlText } from '@deadbolt/core/adapter';
import { runOrders, summarize, type OversellRun } from './oversell.js';
import { ProgressBar } from './progress.js';
import { FileRegister, MemoryRegister, type StockRegister } from './register.js';
import { printSchedule, runScheduleExample, scheduleHelp, scheduleReplica } from './schedule-cli.js';

const help = `deadbolt demo: the oversell race of seed 002, without and with a lock

Usage: npm start -- [options]

  --backend URL      lock backend (default: $DEADBOLT_URL or memory://), e.g.
                     redis://127.0.0.1:6379?mode=setnx, postgres://u:p@127.0.0.1/db,
                     zookeeper://127.0.0.1:2181, memcached://127.0.0.1:11211
  --stock N          items in stock (default 100)
  --orders N         orders placed (default 500)
  --concurrency N    orders in flight at once per process (default 50)
  --processes N      worker processes contending, as separate app servers would
                     (default 1; more than 1 needs a real backend, not memory://)
  --json             print the results as one JSON object
  --example NAME     another demo: "schedule" (a cron job across replicas, see below)
  --help             this text

Each order reads the stock, waits 1 ms (a query, a payment check), then writes stock - 1.
Without a lock, orders that read the same value sell the same item: "oversold".

${scheduleHelp}`;

interface Settings {
  backend: string;
  stock: number;
  orders: number;
  concurrency: number;
  processes: number;
  json: boolean;
}

function positiveInteger(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got "${text}"`);
  return value;
}

async function runInProcess(settings: Settings, withLock: boolean): Promise<OversellRun> {
  const register = new MemoryRegister(settings.stock);
  const client = withLock ? createLockClient(settings.backend) : undefined;
  const bar = settings.json ? undefined : new ProgressBar(withLock ? 'with lock' : 'without lock', settings.orders);
  const started = performance.now();
  try {
    // One attempt first: a backend that cannot be reached (or refuses the password) fails the demo
    // at once, instead of every order waiting out its 120 s lock wait.
    await (await client?.tryAcquire('demo:reachable', { ttlMs: 5_000 }))?.release();
    const sold = await runOrders({ ...settings, register, ...(client ? { client } : {}), onOrderDone: () => bar?.tick() });
    return summarize(settings.stock, settings.orders, sold, performance.now() - started);
  } finally {
    bar?.finish();
    await client?.close();
  }
}

/** Several processes share one stock file; the lock, if any, lives on the real backend. */
async function runAcrossProcesses(settings: Settings, withLock: boolean): Promise<OversellRun> {
  const register = FileRegister.create(settings.stock);
  const bar = settings.json ? undefined : new ProgressBar(withLock ? 'with lock' : 'without lock', settings.processes);
  const started = performance.now();
  try {
    const shares = Array.from(
      { length: settings.processes },
      (_, index) => Math.floor(settings.orders / settings.processes) + (index < settings.orders % settings.processes ? 1 : 0),
    );
    const solds = await Promise.all(
      shares.map(async (orders) => {
        const sold = await runWorkerProcess(settings, register.path, orders, withLock);
        bar?.tick();
        return sold;
      }),
    );
    return summarize(
      settings.stock,
      settings.orders,
      solds.reduce((a, b) => a + b, 0),
      performance.now() - started,
    );
  } finally {
    bar?.finish();
    register.remove();
  }
}

function runWorkerProcess(settings: Settings, registerPath: string, orders: number, withLock: boolean): Promise<number> {
  const args = [
    fileURLToPath(import.meta.url),
    '--worker',
    registerPath,
    '--orders',
    String(orders),
    '--concurrency',
    String(settings.concurrency),
    '--backend',
    settings.backend,
  ];
  if (withLock) args.push('--with-lock');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(Number(output.trim()));
      else reject(new Error(`worker exited with code ${code}`));
    });
  });
}

async function worker(registerPath: string, settings: Settings, withLock: boolean): Promise<void> {
  const register: StockRegister = new FileRegister(registerPath);
  const client = withLock ? createLockClient(settings.backend) : undefined;
  try {
    const sold = await runOrders({ ...settings, register, ...(client ? { client } : {}) });
    process.stdout.write(`${sold}\n`);
  } finally {
    await client?.close();
  }
}

function table(settings: Settings, rows: [string, OversellRun][]): string {
  const header = ['run', 'orders', 'sold', 'oversold', 'time (ms)'];
  const body = rows.map(([name, run]) => [name, String(run.orders), String(run.sold), String(run.oversold), String(run.ms)]);
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((row) => row[column]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [
    `Stock ${settings.stock}, ${settings.orders} orders, ${settings.concurrency} in flight x ${settings.processes} process(es), backend ${redactUrlText(settings.backend)}`,
    line(header),
    `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`,
    ...body.map(line),
  ].join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string' },
      stock: { type: 'string' },
      orders: { type: 'string' },
      concurrency: { type: 'string' },
      processes: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
      worker: { type: 'string' },
      'with-lock': { type: 'boolean', default: false },
      example: { type: 'string' },
      replicas: { type: 'string' },
      ticks: { type: 'string' },
      'schedule-replica': { type: 'string' },
      job: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(help);
    return 0;
  }
  const settings: Settings = {
    backend: values.backend ?? process.env.DEADBOLT_URL ?? 'memory://',
    stock: positiveInteger('stock', values.stock, 100),
    orders: positiveInteger('orders', values.orders, 500),
    concurrency: positiveInteger('concurrency', values.concurrency, 50),
    processes: positiveInteger('processes', values.processes, 1),
    json: values.json ?? false,
  };
  const backend = values.backend ?? process.env.DEADBOLT_URL ?? 'memory://';
  if (values['schedule-replica'] !== undefined) {
    await scheduleReplica(
      positiveInteger('schedule-replica', values['schedule-replica'], 1),
      backend,
      values.job ?? 'demo:schedule',
      values['with-lock'] ?? false,
    );
    return 0;
  }
  if (values.example === 'schedule') {
    const run = await runScheduleExample(
      backend,
      positiveInteger('replicas', values.replicas, 3),
      positiveInteger('ticks', values.ticks, 5),
    );
    return printSchedule(run, values.json ?? false);
  }
  if (values.example !== undefined) throw new Error(`--example must be "schedule", got "${values.example}"`);
  if (values.worker !== undefined) {
    await worker(values.worker, settings, values['with-lock'] ?? false);
    return 0;
  }
  if (settings.processes > 1 && settings.backend.startsWith('memory:')) {
    throw new Error(
      '--processes > 1 needs a real backend: memory:// locks only work inside one process (try --backend redis://127.0.0.1:6379)',
    );
  }
  const run = settings.processes > 1 ? runAcrossProcesses : runInProcess;
  const withoutLock = await run(settings, false);
  const withLock = await run(settings, true);
  if (settings.json) {
    console.log(JSON.stringify({ withoutLock, withLock, backend: redactUrlText(settings.backend) }));
  } else {
    console.log(
      table(settings, [
        ['without lock', withoutLock],
        ['with lock', withLock],
      ]),
    );
    console.log(
      withoutLock.oversold > 0
        ? `Without a lock ${withoutLock.oversold} item(s) were sold that did not exist.`
        : 'Without a lock nothing was oversold this time: the race is real but was not hit (try more --concurrency).',
    );
    console.log(
      withLock.oversold === 0
        ? `With a lock: exactly ${withLock.sold} sold, none oversold.`
        : `With a lock ${withLock.oversold} item(s) were OVERSOLD: this is a bug, please report it.`,
    );
  }
  return withLock.oversold === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`deadbolt demo: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 2;
  },
);
