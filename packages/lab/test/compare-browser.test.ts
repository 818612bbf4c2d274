import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import type { History, Interval, WriteRecord } from '../src/compare/history.js';
import type { RegisterOp } from '../src/compare/register-ops.js';
import { row } from '../src/compare/scenario-kit.js';
import { writeResults } from '../src/compare/summary.js';
import { timelineFile } from '../src/compare/timeline.js';

/**
 * The report in a real browser: Debian's Chromium (installed by .ci/run), headless, renders
 * index.html and one timeline to PNG with no console error, no page error and no failed request.
 * The report is written from hand-made histories (a pause with an overlap, a stale write and a loss
 * notice; an election with a window of no holder), so this test needs no server.
 */
const executablePath = '/usr/bin/chromium';
const haveChromium = existsSync(executablePath);
const dir = mkdtempSync(join(tmpdir(), 'deadbolt-compare-browser-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const t0 = 1_000_000;
const hold = (client: string, start: number, end: number, fence: number, extra: Partial<Interval> = {}): Interval => ({
  client,
  start: t0 + start,
  end: t0 + end,
  fence,
  outcome: 'released',
  ...extra,
});
const write = (client: string, at: number, fence: number, accepted: boolean, stale: boolean, value?: number): WriteRecord => ({
  client,
  at: t0 + at,
  fence,
  accepted,
  stale,
  ...(value === undefined ? {} : { value }),
});

const op = (process: string, f: 'read' | 'write', value: number, at: number): RegisterOp => ({
  process,
  f,
  value,
  invoke: t0 + at,
  complete: t0 + at + 0.2,
  outcome: 'ok',
});
const paused: History = {
  startedAt: t0,
  endedAt: t0 + 6000,
  faults: [{ label: 'c0 paused (SIGSTOP) 3 s', start: t0 + 800, end: t0 + 3800 }],
  intervals: [
    hold('c0', 500, 3900, 1, { outcome: 'lost', lostNoticeAt: t0 + 3900, leaseExpiresAt: t0 + 1500 }),
    hold('c1', 1600, 1900, 2),
    hold('c2', 1950, 2250, 3),
    hold('c1', 4000, 4300, 4),
  ],
  plainWrites: [
    write('c1', 1900, 2, true, false),
    write('c2', 2250, 3, true, false),
    write('c0', 3900, 1, true, true),
    write('c1', 4300, 4, true, false),
  ],
  fencedWrites: [
    write('c1', 1900, 2, true, false, 1),
    write('c2', 2250, 3, true, false, 2),
    write('c0', 3900, 1, false, true, 1),
    write('c1', 4300, 4, true, false, 3),
  ],
  fencedStore: { kind: 'redis', label: 'Redis, fencedSet', finalValue: 3, finalFence: 4 },
  // c0 read 0 before its pause and wrote 1 after it, over c1's and c2's work: a lost update.
  plainOps: [
    op('c0', 'read', 0, 510),
    op('c1', 'read', 0, 1610),
    op('c1', 'write', 1, 1900),
    op('c2', 'read', 1, 1960),
    op('c2', 'write', 2, 2250),
    op('c0', 'write', 1, 3900),
    op('c1', 'read', 1, 4010),
    op('c1', 'write', 2, 4300),
  ],
};
const election: History = {
  startedAt: t0,
  endedAt: t0 + 5000,
  faults: [{ label: 'leader stopped, until a new one is elected', start: t0 + 2000, end: t0 + 3500 }],
  intervals: [hold('c0', 300, 600, 1), hold('c1', 700, 1900, 2), hold('c2', 3600, 3900, 3), hold('c0', 4000, 4300, 4)],
  plainWrites: [],
  fencedWrites: [],
};

async function render(context: BrowserContext, url: string, png: string): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  await page.goto(url, { waitUntil: 'load' });
  await page.screenshot({ path: png, fullPage: true });
  return { page, problems };
}

/** Width and height from a PNG's IHDR chunk. */
function pngSize(file: string): { width: number; height: number } {
  const b = readFileSync(file);
  expect(b.subarray(1, 4).toString('latin1')).toBe('PNG');
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

describe.skipIf(!haveChromium)(
  `compare report in headless Chromium${haveChromium ? '' : ` (skipped: ${executablePath} not installed)`}`,
  () => {
    it('renders index.html and a timeline to PNG with no console error', async () => {
      const results = [
        row(
          'redis',
          'setnx',
          'client-pause',
          paused,
          'overlaps; 0 stale writes accepted by the fenced register',
          (c) => c.overlaps > 0 && c.staleWritesAcceptedFenced === 0,
        ),
        row('zookeeper', 'ephemeral-sequential', 'zookeeper-leader-loss', election, '0 overlaps', (c) => c.overlaps === 0),
      ];
      await writeResults(dir, results, {}, { kind: 'selection', quick: false, elapsedMs: 11_000 });
      const profile = mkdtempSync(join(tmpdir(), 'deadbolt-chromium-profile-'));
      const context = await chromium.launchPersistentContext(profile, {
        executablePath,
        headless: true,
        viewport: { width: 1200, height: 900 },
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      try {
        const index = await render(context, pathToFileURL(join(dir, 'index.html')).href, join(dir, 'index.png'));
        expect(index.problems).toEqual([]);
        // The matrix: two rows, their cells coloured and linked to their timelines.
        const cells = index.page.locator('table.matrix td a');
        expect(await cells.count()).toBe(2);
        expect(await index.page.locator('table.matrix').innerText()).toMatch(/overlapped[\s\S]*unavailable|unavailable[\s\S]*overlapped/);
        expect(pngSize(join(dir, 'index.png')).height).toBeGreaterThan(600);
        const note = await index.page.locator('[data-fenced-note]').innerText();
        expect(note).toContain('Who refused the stale writes: the fenced store, not the lock.');
        expect(note).toContain('Redis, fencedSet for the redis rows');
        expect(await index.page.locator('table.matrix').innerText()).toContain('Redis refused it');

        // Follow the pause's link, as a reader would.
        await index.page
          .locator(`a[href="${timelineFile(results[0]!)}"]`)
          .first()
          .click();
        await index.page.waitForLoadState('load');
        await index.page.screenshot({ path: join(dir, 'timeline.png'), fullPage: true });
        expect(index.problems).toEqual([]);
        const svg = index.page.locator('svg[role="img"]');
        expect(await svg.count()).toBe(1);
        const text = await svg.textContent();
        expect(text).toContain('fault: c0 paused (SIGSTOP) 3 s');
        expect(text).toContain('stale write accepted');
        expect(text).toContain('stale write refused by the store, not the lock');
        expect(text).toContain('checked by Redis');
        // Said in words above the timeline, as on the index: the store refused it, not the lock.
        expect(await index.page.locator('[data-fenced-note]').innerText()).toMatch(
          /refusing a stale write with StaleFenceError: the store refused it, not the lock \(by then the lock server had already let the paused holder go/,
        );
        expect(text).toContain('time since the run started (seconds)');
        // The linearizability section shows the operations around where the search failed.
        expect(await index.page.locator('[data-linearizable]').innerText()).toBe('not linearizable');
        const window = index.page.locator('table.linearizability-window');
        expect(await window.locator('tbody tr').count()).toBeGreaterThanOrEqual(2);
        expect(await window.locator('tr.blocked').count()).toBe(1);
        expect(await window.innerText()).toContain('read 0, write 1');
        const box = await svg.boundingBox();
        expect(box!.width).toBeGreaterThan(800);
        expect(pngSize(join(dir, 'timeline.png')).width).toBeGreaterThanOrEqual(1080);
      } finally {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      }
    }, 60_000);
  },
);
