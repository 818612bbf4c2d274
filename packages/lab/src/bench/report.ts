import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, type as osType, release as osRelease } from 'node:os';
import { join } from 'node:path';
import { round } from './stats.js';
import type { BenchRow } from './subject.js';

export interface MachineDescription {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  readonly servers: string;
}

export function describeMachine(servers: string): MachineDescription {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model ?? 'unknown',
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    os: `${osType()} ${osRelease()}`,
    node: process.version,
    servers,
  };
}

const sameMeasurement = (a: BenchRow, b: BenchRow): boolean =>
  a.backend === b.backend && a.workload === b.workload && (a.holdMs ?? 0) === (b.holdMs ?? 0);

/** Fills ratioToRaw: each subject's throughput over the bare protocol's, measured in the same run. */
export function addRatios(rows: BenchRow[]): void {
  for (const row of rows) {
    const raw = rows.find((other) => other.subject === 'raw' && sameMeasurement(row, other));
    row.ratioToRaw = raw && raw.opsPerSec > 0 ? round(row.opsPerSec / raw.opsPerSec, 2) : null;
  }
}

function format(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '-';
  if (!Number.isFinite(value)) return 'inf';
  return String(value);
}

function peerRatio(row: BenchRow, rows: BenchRow[], peer: string): string {
  if (row.subject !== 'deadbolt') return '-';
  const other = rows.find((candidate) => candidate.subject === peer && sameMeasurement(row, candidate));
  if (!other) return '-';
  const mine = row.ownerChangesPerSec ?? row.opsPerSec;
  const theirs = other.ownerChangesPerSec ?? other.opsPerSec;
  return theirs > 0 ? `${round(mine / theirs, 1)}x` : 'inf';
}

export function renderTable(rows: BenchRow[]): string {
  const header = [
    'backend',
    'mode',
    'workload',
    'hold',
    'subject',
    'ops/s',
    'owner chg/s',
    'p50 ms',
    'p99 ms',
    'max ms',
    'fairness',
    'vs raw',
    'vs hand-off',
    'vs redlock',
    'vs semaphore',
    'vs etcd3 lock',
    'notes',
  ];
  const body = rows.map((row) => [
    row.backend,
    row.mode,
    row.workload,
    row.holdMs === undefined ? '-' : `${row.holdMs}ms`,
    row.subject,
    format(row.opsPerSec),
    format(row.ownerChangesPerSec),
    format(row.p50Ms),
    format(row.p99Ms),
    format(row.maxMs),
    format(row.fairness),
    row.ratioToRaw === null ? '-' : `${row.ratioToRaw}x`,
    row.workload.startsWith('contended') || row.workload.startsWith('semaphore') ? peerRatio(row, rows, 'token-handoff') : '-',
    peerRatio(row, rows, 'node-redlock'),
    peerRatio(row, rows, 'redis-semaphore'),
    peerRatio(row, rows, 'etcd3-lock'),
    Object.entries(row.extra ?? {})
      .filter(([, value]) => value !== 0)
      .map(([name, value]) => `${name}=${value}`)
      .concat(row.failures ? [`failures=${row.failures}`] : [])
      .join(' '),
  ]);
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), `|${header.map(() => '---').join('|')}|`, ...body.map(line)].join('\n');
}

/** How the rows were measured, and the machine's load average (1, 5, 15 min) around the run. */
export interface MeasurementMethod {
  /** Rows compared with each other ran in alternating slices (interleave.ts), not one after the other. */
  readonly interleaved: boolean;
  readonly rounds: number;
  readonly sliceMs: number;
  readonly loadAverageAtStart: readonly number[];
  readonly loadAverageAtEnd: readonly number[];
}

const loads = (values: readonly number[]): string => values.map((value) => value.toFixed(2)).join(' / ');

export function writeResults(directory: string, machine: MachineDescription, method: MeasurementMethod, rows: BenchRow[]): void {
  mkdirSync(directory, { recursive: true });
  const jsonRows = rows.map((row) => ({
    ...row,
    fairness: row.fairness !== null && !Number.isFinite(row.fairness) ? 'inf' : row.fairness,
  }));
  writeFileSync(join(directory, 'results.json'), `${JSON.stringify({ machine, method, rows: jsonRows }, null, 2)}\n`);
  const markdown = [
    '# Deadbolt benchmark',
    '',
    `Machine: ${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}; servers: ${machine.servers} on loopback.`,
    'Every ratio compares figures measured in this same run: "vs raw" is throughput over the bare protocol on the raw client',
    '(ops/s), "vs hand-off" compares contended owner changes/s with a bare BLPOP/LPUSH token passed between the same number of',
    'workers (the limit of a hand-off on that server; on semaphore rows acquisitions/s against one token per permit, and',
    '`boundPerSec` is permits / hold), "vs redlock" / "vs semaphore" compare owner changes/s under contention',
    "(ops/s otherwise) with node-redlock v5 and redis-semaphore's Mutex at their default settings. Absolute numbers depend on",
    'the machine; the ratios are the result. Fairness is max / min acquisitions per worker; `fifoFloor` in the notes is what a',
    'perfectly fair FIFO lock would score on average with the same acquisitions in each slice, if each slice began its queue in',
    'a random order (with few turns per worker, the extra turns fall unevenly): a model to read a fairness beside, not a bound.',
    method.interleaved
      ? `Subjects compared with each other were interleaved: ${method.rounds} rounds, one slice of ${method.sliceMs} ms per subject each (the order rotates every round), each figure the sum over its slices, so load changes fall on all of them alike.`
      : 'Rows ran one after the other (not interleaved): a load change between two rows moves their ratio.',
    `Load average (1 / 5 / 15 min): ${loads(method.loadAverageAtStart)} at the start, ${loads(method.loadAverageAtEnd)} at the end.`,
    '',
    renderTable(rows),
    '',
  ].join('\n');
  writeFileSync(join(directory, 'results.md'), markdown);
}
