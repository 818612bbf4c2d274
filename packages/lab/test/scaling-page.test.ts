import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { choosePoints, parsePointList } from '../src/bench/scaling-points.js';
import { writeScalingResults } from '../src/bench/scaling-report.js';
import type { ContentionPoint, HeldPoint, KeysPoint, ScalingResults } from '../src/bench/scaling-results.js';

/**
 * The scaling page (`npm run bench -- --scaling`) in headless Chromium, written from a small
 * hand-made results fixture (the real scaling run takes minutes and needs a quiet machine, so it
 * never runs here): every chart renders as SVG with labelled axes, the hand-off is drawn dashed as
 * the limit, and the page logs no console error, page error or failed request.
 */
const executablePath = '/usr/bin/chromium';
const haveChromium = existsSync(executablePath);
const dir = mkdtempSync(join(tmpdir(), 'deadbolt-scaling-page-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const contention = (
  mode: string,
  subject: ContentionPoint['subject'],
  workers: number,
  changes: number,
  p99Ms: number,
): ContentionPoint => ({
  backend: 'redis',
  mode,
  subject,
  workers,
  ownerChangesPerSec: changes,
  acquisitionsPerSec: changes,
  p50Ms: p99Ms / 4,
  p99Ms,
  maxMs: p99Ms * 2,
  fairness: subject === 'node-redlock' && workers > 10 ? null : 1.05,
  starvedWorkers: subject === 'node-redlock' && workers > 10 ? 3 : 0,
  failures: 0,
  vsHandoff: subject === 'token-handoff' ? null : 0.5,
});
const held = (mode: string, locks: number, heap: number, cpu: number): HeldPoint => ({
  backend: 'redis',
  mode,
  locks,
  ttlMs: 3_000,
  lost: 0,
  lostWhileAcquiring: 0,
  renewalErrorsWhileAcquiring: 0,
  heapBytesPerLock: heap,
  clientRenewalCallsPerTick: 1,
  serverCommandsPerTick: locks,
  clientCpuPercent: cpu,
  renewalP50Ms: 2,
  renewalP99Ms: 9,
  renewalErrors: 0,
  windowMs: 6_000,
  acquirePerSec: 9_000,
});
const keys = (mode: string, subject: KeysPoint['subject'], count: number, ops: number): KeysPoint => ({
  backend: 'redis',
  mode,
  subject,
  keys: count,
  opsPerSec: ops,
  p50Ms: 0.1,
  p99Ms: 2,
  failures: 0,
});

const fixture: ScalingResults = {
  machine: { cpus: 2, cpuModel: 'test cpu', memoryGiB: 8, os: 'Linux', node: 'v20', servers: 'process' },
  method: {
    schedule: { rounds: 4, sliceMs: 250 },
    heldTtlMs: 3_000,
    heldPeriods: 2,
    loadAverageAtStart: [4.5, 3, 2],
    loadAverageAtEnd: [5.25, 3.5, 2.5],
    startedAt: '2026-11-27T12:00:00.000Z',
    elapsedSeconds: 300,
  },
  contention: [1, 10, 200].flatMap((n) => [
    contention('BLPOP/LPUSH token', 'token-handoff', n, 12_000 / Math.sqrt(n), 1 + n / 10),
    contention('fair', 'deadbolt', n, 6_000 / Math.sqrt(n), 2 + n / 5),
    contention('setnx', 'deadbolt', n, 2_000 / n, 5 + n),
    contention('default settings', 'node-redlock', n, 100 / n, 200 + n),
  ]),
  held: [1_000, 10_000, 100_000].flatMap((n) => [held('fair', n, 900, n / 1_000), held('setnx', n, 700, n / 1_500)]),
  keys: [1, 10, 1_000].flatMap((n) => [
    keys('bare protocol', 'raw', n, 5_000 * Math.log10(n * 10)),
    keys('fair', 'deadbolt', n, 4_500 * Math.log10(n * 10)),
  ]),
};

describe('scaling points', () => {
  it('takes a list of positive whole numbers or none, and refuses anything else before any run', () => {
    expect(parsePointList('points', '200,1, 10')).toEqual([1, 10, 200]);
    expect(parsePointList('held', 'none')).toEqual([]);
    expect(() => parsePointList('points', '1,0')).toThrow(/--points: "0"/);
    expect(() => parsePointList('keys', '1,x')).toThrow(TypeError);
    expect(choosePoints(true, { points: '2,20' }).workers).toEqual([2, 20]);
    expect(choosePoints(false, {}).workers).toEqual([1, 2, 5, 10, 20, 50, 100, 200]);
    expect(choosePoints(false, {}).held).toEqual([1_000, 10_000, 100_000]);
  });
});

describe.skipIf(!haveChromium)(
  `scaling page in headless Chromium${haveChromium ? '' : ` (skipped: ${executablePath} not installed)`}`,
  () => {
    it('renders every chart with labelled axes, the hand-off as the limit, and no console error', async () => {
      writeScalingResults(dir, fixture);
      expect(JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')).contention).toHaveLength(12);
      expect(readFileSync(join(dir, 'results.md'), 'utf8')).toContain('| 200 | redis fair |');
      const profile = mkdtempSync(join(tmpdir(), 'deadbolt-chromium-profile-'));
      const context = await chromium.launchPersistentContext(profile, {
        executablePath,
        headless: true,
        viewport: { width: 1400, height: 900 },
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      try {
        const page = await context.newPage();
        const problems: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
        });
        page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
        page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
        await page.goto(pathToFileURL(join(dir, 'index.html')).href, { waitUntil: 'load' });
        await page.screenshot({ path: join(dir, 'index.png'), fullPage: true });
        expect(problems).toEqual([]);

        // Owner changes/s and p99 against N, heap and CPU against held locks, keys-in-flight throughput.
        const charts = page.locator('figure[data-chart] svg[role="img"]');
        expect(await charts.count()).toBe(5);
        for (const id of ['redis-owner-changes', 'redis-p99', 'held-heap', 'held-cpu', 'redis-keys']) {
          const chart = page.locator(`figure[data-chart="${id}"] svg[role="img"]`);
          const box = await chart.boundingBox();
          expect(box!.width).toBeGreaterThan(300);
          expect(box!.height).toBeGreaterThan(150);
          expect((await chart.locator('text[data-axis="x"]').textContent())!.length).toBeGreaterThan(5);
          expect((await chart.locator('text[data-axis="y"]').textContent())!.length).toBeGreaterThan(5);
          expect(await chart.locator('text.tick').count()).toBeGreaterThan(3);
          expect(await chart.locator('path[data-series]').count()).toBeGreaterThanOrEqual(2);
        }
        const owners = page.locator('figure[data-chart="redis-owner-changes"]');
        expect(await owners.locator('text[data-axis="x"]').textContent()).toBe('workers on one key (N) (log scale)');
        expect(await owners.locator('text[data-axis="y"]').textContent()).toBe('owner changes per second');
        // The hand-off is the one dashed line, and the legend says it is the limit.
        const dashed = owners.locator('path[stroke-dasharray]');
        expect(await dashed.count()).toBe(1);
        expect(await dashed.getAttribute('data-series')).toBe('redis hand-off (BLPOP/LPUSH token)');
        expect(await owners.locator('figcaption').innerText()).toContain('(the limit)');
        // Every point of every line is inside its plot (no NaN coordinates).
        const coordinates = await page
          .locator('svg circle')
          .evaluateAll((circles) => circles.map((c) => [Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))]));
        expect(coordinates.length).toBeGreaterThan(30);
        for (const [cx, cy] of coordinates) {
          expect(cx).toBeGreaterThanOrEqual(72);
          expect(cx).toBeLessThanOrEqual(624);
          expect(cy).toBeGreaterThanOrEqual(36);
          expect(cy).toBeLessThanOrEqual(308);
        }
        expect(await page.locator('[data-load]').innerText()).toContain('4.50 / 3.00 / 2.00 at the start');
        expect(await page.locator('table.contention').innerText()).toContain('inf (3 starved)');
      } finally {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      }
    }, 60_000);
  },
);
