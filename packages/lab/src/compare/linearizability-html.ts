/**
 * The timeline page's linearizability section: the verdict on the plain register's history, and
 * when it is false, the operations around where no order worked, as a table.
 */
import { esc } from './html-kit.js';
import type { ScenarioResult } from './scenario-kit.js';

const at = (ms: number, origin: number): string => `${((ms - origin) / 1000).toFixed(3)} s`;

const verdictText = {
  true: 'linearizable',
  false: 'not linearizable',
  unknown: 'unknown',
} as const;

export function linearizabilitySection(r: ScenarioResult): string {
  const l = r.check.linearizability;
  const origin = r.history.startedAt;
  const intro = `<p>The plain register's history, every hold's read and the write after it taken as one read-modify-write (what holding the lock promises), checked for one order of all ${l.operations} operations that respects real time (Wing &amp; Gong's search, memoised as Lowe and Porcupine do; ${l.steps} steps): <b class="${l.linearizable === true ? 'verdict-yes' : l.linearizable === false ? 'verdict-no' : ''}" data-linearizable="${String(l.linearizable)}">${verdictText[String(l.linearizable) as keyof typeof verdictText]}</b>. ${esc(l.reason)}.</p>`;
  const disagree =
    r.contradictions.length > 0
      ? `<p class="verdict-no">The run's verdicts disagree, so it is not counted as predicted: ${r.contradictions.map(esc).join('; ')}.</p>`
      : '';
  if (l.linearizable !== false || l.window.length === 0) return `${intro}${disagree}`;
  const rows = l.window.map(
    (o) =>
      `<tr${o.blocked ? ' class="blocked"' : ''}><td>${esc(o.process)}</td><td>${esc(o.what)}</td><td class="num">${at(o.invoke, origin)}</td><td class="num">${o.complete === undefined ? 'no reply' : at(o.complete, origin)}</td><td>${o.blocked ? '<b>no place for it in any order</b>' : o.outcome === 'info' ? 'may or may not have taken effect' : ''}</td></tr>`,
  );
  if (l.windowOmitted > 0)
    rows.push(
      `<tr><td colspan="5">and ${l.windowOmitted} more operation${l.windowOmitted === 1 ? '' : 's'} overlapping the blocked one, not shown</td></tr>`,
    );
  return `${intro}${disagree}<table class="linearizability-window"><caption>The operations around where the search failed (times since the run started)</caption><thead><tr><th>client</th><th>operation</th><th>invoked</th><th>completed</th><th></th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}
