import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scalingHtml } from './scaling-page.js';
import { type ScalingResults, seriesName } from './scaling-results.js';

const loads = (values: readonly number[]): string => values.map((value) => value.toFixed(2)).join(' / ');
const cell = (value: number | null): string => (value === null ? '-' : String(value));
const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;

function markdownTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  return [line(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
}

export function scalingMarkdown(results: ScalingResults): string {
  const { machine, method } = results;
  return [
    '# Deadbolt scaling',
    '',
    `Machine: ${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}; servers: ${machine.servers} on loopback.`,
    `Started ${method.startedAt}, ${method.elapsedSeconds} s. Load average (1 / 5 / 15 min): ${loads(method.loadAverageAtStart)} at the start, ${loads(method.loadAverageAtEnd)} at the end.`,
    `Each point's subjects ran interleaved (${method.schedule.rounds} x ${method.schedule.sliceMs} ms slices each); held locks: ttl ${method.heldTtlMs} ms over ${method.heldPeriods} periods. Figures on a shared machine are noisy.`,
    '',
    '## Contention: N workers on one key',
    '',
    markdownTable(
      ['N', 'subject', 'owner chg/s', 'vs hand-off', 'p50 ms', 'p99 ms', 'fairness', 'failures'],
      results.contention.map((p) => [
        String(p.workers),
        seriesName(p),
        String(p.ownerChangesPerSec),
        p.vsHandoff === null ? '-' : `${p.vsHandoff}x`,
        String(p.p50Ms),
        String(p.p99Ms),
        p.fairness === null ? 'inf' : String(p.fairness),
        String(p.failures),
      ]),
    ),
    '',
    '## Held locks',
    '',
    markdownTable(
      [
        'mode',
        'locks',
        'heap B/lock',
        'renewal calls/tick',
        'server commands/tick',
        'CPU %',
        'renewal p50 ms',
        'renewal p99 ms',
        'renewal errors',
        'lost (while taking them)',
        'renewal errors while taking them',
      ],
      results.held.map((p) => [
        `${p.backend} ${p.mode}`,
        String(p.locks),
        String(p.heapBytesPerLock),
        String(p.clientRenewalCallsPerTick),
        cell(p.serverCommandsPerTick),
        String(p.clientCpuPercent),
        String(p.renewalP50Ms),
        String(p.renewalP99Ms),
        String(p.renewalErrors),
        `${p.lost} (${p.lostWhileAcquiring})`,
        String(p.renewalErrorsWhileAcquiring),
      ]),
    ),
    '',
    '## Keys in flight',
    '',
    markdownTable(
      ['keys', 'subject', 'cycles/s', 'p50 ms', 'p99 ms', 'failures'],
      results.keys.map((p) => [String(p.keys), seriesName(p), String(p.opsPerSec), String(p.p50Ms), String(p.p99Ms), String(p.failures)]),
    ),
    '',
  ].join('\n');
}

/** results.json, results.md and index.html (the charts) in `directory`. */
export function writeScalingResults(directory: string, results: ScalingResults): void {
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(directory, 'results.md'), scalingMarkdown(results));
  writeFileSync(join(directory, 'index.html'), scalingHtml(results));
}
