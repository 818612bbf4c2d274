import { type ContentionPoint, type HeldPoint, isHandoff, type KeysPoint, type ScalingResults, seriesName } from './scaling-results.js';
import { type Chart, escapeHtml as esc, formatNumber, lineChart, palette, type Series } from './svg-chart.js';

const loads = (values: readonly number[]): string => values.map((value) => value.toFixed(2)).join(' / ');

/** One series per subject (in first-seen order), coloured in that order; the hand-off dashed. */
function seriesOf<P extends { backend: string; mode: string; subject: ContentionPoint['subject'] }>(
  points: readonly P[],
  x: (p: P) => number,
  y: (p: P) => number | null,
  limit: (p: P) => boolean,
): Series[] {
  const names = [...new Set(points.map(seriesName))];
  return names.map((name, index) => {
    const mine = points.filter((p) => seriesName(p) === name);
    return {
      name,
      colour: palette[index % palette.length]!,
      limit: mine.some(limit),
      points: mine.flatMap((p) => {
        const value = y(p);
        return value === null ? [] : [{ x: x(p), y: value }];
      }),
    };
  });
}

const backends = <P extends { backend: string }>(points: readonly P[]): string[] => [...new Set(points.map((p) => p.backend))];

const fixed = (value: number | null, digits = 2): string =>
  value === null || !Number.isFinite(value) ? (value === null ? '-' : 'inf') : String(Math.round(value * 10 ** digits) / 10 ** digits);

function table(head: readonly string[], rows: readonly (readonly string[])[], className: string): string {
  const th = head.map((cell) => `<th>${esc(cell)}</th>`).join('');
  const body = rows.map((row) => `<tr>${row.map((cell) => `<td>${esc(cell)}</td>`).join('')}</tr>`).join('');
  return `<table class="${className}"><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table>`;
}

function contentionSection(points: readonly ContentionPoint[]): string {
  return backends(points)
    .map((backend) => {
      const mine = points.filter((p) => p.backend === backend);
      const hasToken = mine.some((p) => p.subject === 'token-handoff');
      const limit = (p: ContentionPoint): boolean => isHandoff(p, hasToken);
      const charts: Chart[] = [
        {
          id: `${backend}-owner-changes`,
          title: `${backend}: owner changes/s, N workers on one key`,
          xLabel: 'workers on one key (N)',
          yLabel: 'owner changes per second',
          xLog: true,
          series: seriesOf(
            mine,
            (p) => p.workers,
            (p) => p.ownerChangesPerSec,
            limit,
          ),
        },
        {
          id: `${backend}-p99`,
          title: `${backend}: p99 wait for the lock`,
          xLabel: 'workers on one key (N)',
          yLabel: 'p99 wait (ms)',
          xLog: true,
          yLog: true,
          series: seriesOf(
            mine,
            (p) => p.workers,
            (p) => p.p99Ms,
            limit,
          ),
        },
      ];
      const rows = mine.map((p) => [
        String(p.workers),
        seriesName(p),
        fixed(p.ownerChangesPerSec, 0),
        p.vsHandoff === null ? '-' : `${p.vsHandoff}x`,
        fixed(p.p50Ms),
        fixed(p.p99Ms),
        p.fairness === null ? `inf (${p.starvedWorkers} starved)` : fixed(p.fairness),
        String(p.failures),
      ]);
      return `<h3>${esc(backend)}</h3><div class="charts">${charts.map(lineChart).join('')}</div>${table(
        ['N', 'subject', 'owner chg/s', 'vs hand-off', 'p50 ms', 'p99 ms', 'fairness', 'failures'],
        rows,
        'contention',
      )}`;
    })
    .join('');
}

function heldSection(points: readonly HeldPoint[]): string {
  const named = points.map((p) => ({ ...p, subject: 'deadbolt' as const }));
  const never = (): boolean => false;
  const charts: Chart[] = [
    {
      id: 'held-heap',
      title: 'Heap per held lock',
      xLabel: 'locks held with auto-renew',
      yLabel: 'heap bytes per lock',
      xLog: true,
      series: seriesOf(
        named,
        (p) => p.locks,
        (p) => p.heapBytesPerLock,
        never,
      ),
    },
    {
      id: 'held-cpu',
      title: 'Client CPU while holding',
      xLabel: 'locks held with auto-renew',
      yLabel: 'client CPU (% of one core)',
      xLog: true,
      series: seriesOf(
        named,
        (p) => p.locks,
        (p) => p.clientCpuPercent,
        never,
      ),
    },
  ];
  const rows = points.map((p) => [
    `${p.backend} ${p.mode}`,
    formatNumber(p.locks),
    String(p.heapBytesPerLock),
    fixed(p.clientRenewalCallsPerTick),
    p.serverCommandsPerTick === null ? '-' : fixed(p.serverCommandsPerTick),
    fixed(p.clientCpuPercent, 1),
    `${fixed(p.renewalP50Ms)} / ${fixed(p.renewalP99Ms)}`,
    String(p.renewalErrors),
    `${p.lost} (${p.lostWhileAcquiring} while taking them)`,
  ]);
  return `<div class="charts">${charts.map(lineChart).join('')}</div>${table(
    [
      'mode',
      'locks',
      'heap B/lock',
      'renewal calls/tick (client)',
      'commands/tick (server)',
      'CPU %',
      'renewal p50 / p99 ms',
      'renewal errors',
      'lost (while taking them)',
    ],
    rows,
    'held',
  )}`;
}

function keysSection(points: readonly KeysPoint[]): string {
  return backends(points)
    .map((backend) => {
      const mine = points.filter((p) => p.backend === backend);
      const chart = lineChart({
        id: `${backend}-keys`,
        title: `${backend}: acquire/release cycles/s, keys in flight`,
        xLabel: 'concurrent loops on distinct keys',
        yLabel: 'cycles per second',
        xLog: true,
        series: seriesOf(
          mine,
          (p) => p.keys,
          (p) => p.opsPerSec,
          () => false,
        ),
      });
      const rows = mine.map((p) => [
        String(p.keys),
        seriesName(p),
        fixed(p.opsPerSec, 0),
        fixed(p.p50Ms),
        fixed(p.p99Ms),
        String(p.failures),
      ]);
      return `<h3>${esc(backend)}</h3><div class="charts">${chart}</div>${table(['keys', 'subject', 'cycles/s', 'p50 ms', 'p99 ms', 'failures'], rows, 'keys')}`;
    })
    .join('');
}

const style = `
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1360px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}h3{font-size:15px}
.charts{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0}
svg .grid{stroke:#e4e4e4}svg .frame{fill:none;stroke:#888}svg .tick{font-size:11px;fill:#444}
svg .axis-label{font-size:12px;fill:#222}svg .chart-title{font-size:13px;font-weight:600;fill:#222}
.legend{list-style:none;padding:0;margin:4px 0 0 72px;font-size:12px;display:flex;flex-wrap:wrap;gap:4px 14px}
table{border-collapse:collapse;margin:12px 0;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td:nth-child(2),th:nth-child(2){text-align:left}.note{color:#555}`;

/** The page beside results.json: the three curves as SVG charts, and their tables. */
export function scalingHtml(results: ScalingResults): string {
  const { machine, method } = results;
  const head = `<p class="note" data-machine>${esc(
    `${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}; servers: ${machine.servers} on loopback. Started ${method.startedAt}, ${method.elapsedSeconds} s.`,
  )}</p><p class="note" data-load>${esc(
    `Load average (1 / 5 / 15 min): ${loads(method.loadAverageAtStart)} at the start, ${loads(method.loadAverageAtEnd)} at the end. On a shared machine the figures are noisy; compare the curves of one run with each other, not with another run.`,
  )}</p>`;
  const how = `<p class="note">${esc(
    `Contention and keys in flight: the subjects of one point run interleaved, ${method.schedule.rounds} rounds of one ${method.schedule.sliceMs} ms slice each (after 400 ms unmeasured). At N = 1 owner changes/s is the acquisitions/s of the one worker (no other owner to change to). Fairness is max / min acquisitions per worker. The dashed line is the hand-off, the limit of passing one lock between workers on that server. Held locks: auto-renew with ttl ${method.heldTtlMs} ms (a renewal tick every ttl / 3), measured over ${method.heldPeriods} ttl periods.`,
  )}</p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Deadbolt scaling</title><link rel="icon" href="data:,"><style>${style}</style></head>
<body><h1>Deadbolt scaling</h1>${head}${how}
<h2>Contention: N workers on one key</h2>${results.contention.length ? contentionSection(results.contention) : '<p>Not measured in this run.</p>'}
<h2>Held locks</h2>${results.held.length ? heldSection(results.held) : '<p>Not measured in this run.</p>'}
<h2>Keys in flight</h2>${results.keys.length ? keysSection(results.keys) : '<p>Not measured in this run.</p>'}
</body></html>
`;
}
