/**
 * index.html: the whole comparison on one page. A matrix backend/mode x scenario whose cells are
 * coloured by outcome and marked against the class's prediction, each linking to its timeline;
 * what CP, AP, leases, fencing and each scenario mean, in plain words; the machine and versions;
 * and every figure as a table.
 */
import { fencedNoteForIndex } from './fenced-html.js';
import { fencedStoreNames } from './fenced-store.js';
import { colours, esc, page, swatch } from './html-kit.js';
import type { MachineInfo } from './machine.js';
import { outcomeOf, outcomeText, unavailableThresholdMs, type Outcome } from './outcome.js';
import type { Scenario, ScenarioResult } from './scenario-kit.js';
import { timelineFile } from './timeline.js';

export type RunKind = 'quick' | 'full' | 'selection';

export interface ReportContext {
  readonly machine: MachineInfo;
  readonly scenarios: readonly Scenario[];
  /** Scenario -> why it did not run (skipped, or a harness error). */
  readonly notRun: Readonly<Record<string, string>>;
  /** quick: the --quick plan; full: every scenario and row; selection: --scenario or --only. */
  readonly kind: RunKind;
  readonly elapsedMs: number;
  readonly finishedAt: Date;
}

const rowKey = (r: ScenarioResult): string => `${r.backend}/${r.mode}`;

function cell(r: ScenarioResult | undefined, applies: boolean): string {
  if (!r)
    return applies
      ? '<td class="notrun">not run here</td>'
      : '<td class="notrun" title="this scenario does not run on this backend/mode">&ndash;</td>';
  const o = outcomeOf(r);
  const note =
    o === 'overlapped'
      ? `${r.check.overlaps} overlap${r.check.overlaps === 1 ? '' : 's'}`
      : o === 'unavailable'
        ? `no holder for ${(r.check.faultUnavailableMs / 1000).toFixed(1)} s`
        : `0 overlaps; longest wait ${(r.check.faultUnavailableMs / 1000).toFixed(1)} s`;
  const store = r.history.fencedStore ? fencedStoreNames[r.history.fencedStore.kind].short : 'fenced store';
  const fencing =
    r.check.staleWritesAcceptedPlain + r.check.staleWritesRejectedFenced > 0
      ? `<br>stale write: plain ${r.check.staleWritesAcceptedPlain > 0 ? 'took it' : '-'}, ${esc(store)} ${r.check.staleWritesAcceptedFenced > 0 ? 'took it' : 'refused it'}`
      : '';
  const linear = r.check.linearizability.linearizable === false ? '<br>not linearizable' : '';
  const verdict = r.matched
    ? '<span class="verdict-yes">&#10003; as predicted</span>'
    : '<span class="verdict-no">&#10007; not as predicted</span>';
  return `<td style="background:${colours.outcome[o]}"><a href="${esc(timelineFile(r))}" title="${esc(`${outcomeText[o]}. Predicted: ${r.expectation}`)}"><span class="cell-word">${o}</span><br><span class="cell-note">${note}${fencing}${linear}</span><br>${verdict}</a></td>`;
}

function matrix(results: readonly ScenarioResult[], ctx: ReportContext): string {
  const scenarioNames = ctx.scenarios.map((s) => s.name).filter((n) => results.some((r) => r.scenario === n) || n in ctx.notRun);
  const rowsSeen = [...new Set(results.map(rowKey))];
  // Rows grouped by class (CP first), in the order the runs produced them.
  const ordered = [...rowsSeen].sort((a, b) => {
    const ca = results.find((r) => rowKey(r) === a)!.class;
    const cb = results.find((r) => rowKey(r) === b)!.class;
    return ca === cb ? rowsSeen.indexOf(a) - rowsSeen.indexOf(b) : ca === 'CP' ? -1 : 1;
  });
  const head = `<tr><th>backend / mode</th>${scenarioNames.map((n) => `<th><a href="#scenario-${esc(n)}">${esc(n)}</a></th>`).join('')}</tr>`;
  const body = ordered
    .map((key) => {
      const cls = results.find((r) => rowKey(r) === key)!.class;
      return `<tr><th>${esc(key)} <span class="badge">${cls}</span></th>${scenarioNames
        .map((n) =>
          cell(
            results.find((r) => rowKey(r) === key && r.scenario === n),
            ctx.scenarios.find((s) => s.name === n)?.rows.includes(key) ?? false,
          ),
        )
        .join('')}</tr>`;
    })
    .join('\n');
  return `<div class="scroll"><table class="matrix"><thead>${head}</thead><tbody>${body}</tbody></table></div>`;
}

function outcomeLegend(): string {
  const items = (['exclusive', 'unavailable', 'overlapped'] as Outcome[]).map(
    (o) => `<span>${swatch(colours.outcome[o])}${esc(outcomeText[o])}</span>`,
  );
  return `<div class="legend">${items.join('')}<span>&#10003; / &#10007;: whether the run did what the backend's class predicts for this fault</span></div>`;
}

const explanations = `<dl>
<dt>A lock's two promises</dt><dd>Safety: never two holders at once. Liveness: someone can always take a free lock. When servers fail or the network breaks, no system keeps both; which one it gives up is its class.</dd>
<dt>CP (consistent under partition): ZooKeeper, a single PostgreSQL</dt><dd>Every grant goes through one authority (a quorum that must agree, or one database). When that authority is unreachable or electing a leader, nobody gets the lock: the run is <i>unavailable</i> for a while, never <i>overlapped</i>.</dd>
<dt>AP (available under partition): Redis, Memcached</dt><dd>A server answers on its own: Redis replicates to its replicas after it has replied, and RedLock's masters never talk to each other. A failover or a restart can forget a grant, and the lock is handed out a second time: <i>overlapped</i>.</dd>
<dt>Leases</dt><dd>Every lock here expires unless renewed (for ZooKeeper, with the client's session). That is what frees a lock whose holder died, but it is a timeout: a holder that is paused or cut off for longer than its lease still believes it holds the lock after the server has let it go. So a pause overlaps on every backend, CP or AP. A good client library tells the holder it has lost the lock (a <i>loss notice</i>) before the server can have let it go, whenever it can still count time.</dd>
<dt>Fencing tokens</dt><dd>Each grant carries a number (<code>lock.fence</code>) that grows with every new grant. The protected resource remembers the highest token it has seen and refuses writes with a lower one; the lock cannot, since it has already let the stale holder go. The harness writes to two registers under the lock: a <i>plain</i> one in the harness that accepts everything, and a <i>fenced</i> one in a real data store whose writes go through <code>@deadbolt/fence</code> (PostgreSQL's <code>admitFence</code>, Redis's <code>fencedSet</code>). Where the plain register accepts a stale write and the store refuses it, fencing kept a paused holder from overwriting newer work (Kleppmann, "How to do distributed locking", 2016). The store must also end with the newest holder's value, or the row is not as predicted.</dd>
<dt>Linearizable</dt><dd>Holding the lock should make each hold's read and write of the plain register one indivisible step. The checker looks for an order of all those steps that agrees with when each began and ended and in which each read what the one before wrote (Wing and Gong's search, as Knossos and Porcupine do). Where there is none, some hold's update was lost, whether or not a fence could tell; the run's page shows the operations where the search failed. <i>unknown</i>: the search ran out of its budget.</dd>
</dl>`;

function scenarioList(ctx: ReportContext): string {
  const rowSkips = (name: string): string =>
    Object.entries(ctx.notRun)
      .filter(([k]) => k.startsWith(`${name} `))
      .map(([k, v]) => `<br><i>${esc(k.slice(name.length + 1))} not run here: ${esc(v)}</i>`)
      .join('');
  return `<dl>${ctx.scenarios.map((s) => `<dt id="scenario-${esc(s.name)}">${esc(s.name)}</dt><dd>${esc(s.description)}${ctx.notRun[s.name] ? `<br><i>Not run here: ${esc(ctx.notRun[s.name]!.split('\n')[0]!)}</i>` : ''}${rowSkips(s.name)}</dd>`).join('')}</dl>`;
}

function figures(results: readonly ScenarioResult[]): string {
  const head = [
    'scenario',
    'backend / mode',
    'class',
    'outcome',
    'as predicted',
    'acquisitions',
    'overlaps',
    'stale writes accepted (plain)',
    'fenced store',
    'stale writes refused by the fenced store',
    'stale writes accepted (fenced)',
    'loss notices',
    'longest wait around the fault (ms)',
    'linearizable (plain register)',
    'predicted',
  ];
  const rows = results.map((r) => {
    const c = r.check;
    const num = (n: number): string => `<td class="num">${n}</td>`;
    return `<tr><td><a href="${esc(timelineFile(r))}">${esc(r.scenario)}</a></td><td>${esc(rowKey(r))}</td><td>${r.class}</td><td>${outcomeOf(r)}</td><td>${r.matched ? 'yes' : '<b>no</b>'}</td>${num(c.acquisitions)}${num(c.overlaps)}${num(c.staleWritesAcceptedPlain)}<td>${esc(r.history.fencedStore ? fencedStoreNames[r.history.fencedStore.kind].short : '-')}</td>${num(c.staleWritesRejectedFenced)}${num(c.staleWritesAcceptedFenced)}${num(c.lostNotices)}${num(c.faultUnavailableMs)}<td title="${esc(c.linearizability.reason)}">${c.linearizability.linearizable}</td><td class="predicted">${esc(r.expectation)}</td></tr>`;
  });
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('\n')}</tbody></table>`;
}

function machineSection(ctx: ReportContext): string {
  const m = ctx.machine;
  const list = (o: Readonly<Record<string, string>>): string =>
    Object.entries(o)
      .map(([k, v]) => `${esc(k)} ${esc(v)}`)
      .join(', ');
  return `<table><tbody>
<tr><th>machine</th><td>${m.cpus} &times; ${esc(m.cpuModel)}, ${m.memoryGb} GiB, ${esc(m.platform)} ${esc(m.release)}</td></tr>
<tr><th>servers</th><td>${esc(m.servers === 'container' ? 'containers' : m.servers === 'process' ? 'server processes on loopback' : m.servers)}: ${list(m.serverVersions)}</td></tr>
<tr><th>clients</th><td>node ${esc(m.node)}; ${list(m.clientVersions)}</td></tr>
<tr><th>run</th><td>${{ quick: 'quick (--quick)', full: 'full', selection: 'a selection (--scenario / --only)' }[ctx.kind]}, ${Math.round(ctx.elapsedMs / 1000)} s, finished ${esc(ctx.finishedAt.toISOString().replace('T', ' ').slice(0, 16))} UTC</td></tr>
</tbody></table>`;
}

export function indexHtml(results: readonly ScenarioResult[], ctx: ReportContext): string {
  const matched = results.filter((r) => r.matched).length;
  const errors = Object.entries(ctx.notRun).filter(([, v]) => v.startsWith('harness error'));
  const body = `<h1>Deadbolt: CP vs AP under faults</h1>
<p>Three clients loop <i>take the lock &rarr; read a shared register, work, write it back &rarr; release</i> against real servers while a fault is injected.
A checker then looks at every hold: were two clients ever inside at once, did a stale write get through (to a plain register, and to a data store that checks the lock's fence), was anyone told they had lost the lock, and how long was nobody able to take it.
${results.length} run${results.length === 1 ? '' : 's'}; ${matched} of them did what the backend's class predicts.</p>
${ctx.kind === 'quick' ? `<p><b>This is the quick run:</b> the same faults on one backend of each class, so the classes can be compared fault by fault. A pause breaks every lease, CP or AP, and only the fenced store keeps the stale write out; a partition is survived on every backend by a client that counts its lease itself. Where the classes really differ is when the servers themselves fail (redis-failover and redlock-restart against zookeeper-leader-loss and postgres-restart): run <code>npm run compare</code> without <code>--quick</code> for those.</p>` : ''}
${errors.length > 0 ? `<p class="verdict-no">Harness errors (these scenarios produced nothing): ${errors.map(([k]) => esc(k)).join(', ')}.</p>` : ''}
<h2>Results</h2>
${fencedNoteForIndex(results)}
${outcomeLegend()}
${matrix(results, ctx)}
<p class="meta">Click a cell for its timeline. A window with no holder counts as unavailability from ${unavailableThresholdMs / 1000} s, and only around the fault.</p>
<h2>How to read it</h2>
${explanations}
<h2>The scenarios</h2>
${scenarioList(ctx)}
<h2>Figures</h2>
<p class="meta">The fenced columns count writes checked by the data store named in the <i>fenced store</i> column; a refused write was refused by that store, not by the lock.</p>
${figures(results)}
<h2>Machine and versions</h2>
${machineSection(ctx)}`;
  return page('Deadbolt: CP vs AP under faults', body);
}
