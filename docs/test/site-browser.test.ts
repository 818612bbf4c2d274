import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, relative } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './markdown-files.js';

/**
 * The built site (`npm run docs:build` writes docs/.vitepress/dist) in a real browser: Debian's
 * Chromium, headless, launched as the compare report's browser test launches it. Every page renders
 * with no console error, no page error and no failed request; every local link resolves to a page
 * or file of the site, and its anchor to an element of that page; every image loads; and the local
 * search finds "fence". Served from loopback by a static server: nothing leaves the machine.
 */
const executablePath = '/usr/bin/chromium';
const haveChromium = existsSync(executablePath);
const dist = join(repoRoot, 'docs', '.vitepress', 'dist');
const haveSite = existsSync(join(dist, 'index.html'));
const skipReason = !haveChromium
  ? ` (skipped: ${executablePath} not installed)`
  : !haveSite
    ? ' (skipped: docs/.vitepress/dist not built; run npm run docs:build)'
    : '';

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2',
};

/** The site's files as URL paths: `/index.html`, `/primitives/mutex.html`, `/assets/...`. */
function siteFiles(dir = dist, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) siteFiles(path, out);
    else out.push(`/${relative(dist, path).split('\\').join('/')}`);
  }
  return out;
}

/** Resolves a URL path to a file of the site the way a static host does (`/api/` -> `/api/index.html`). */
function fileOf(pathname: string): string | undefined {
  const decoded = decodeURIComponent(pathname);
  const candidates = decoded.endsWith('/') ? [`${decoded}index.html`] : [decoded, `${decoded}.html`];
  for (const candidate of candidates) {
    const file = join(dist, candidate);
    if (file.startsWith(dist) && existsSync(file) && statSync(file).isFile()) return file;
  }
  return undefined;
}

let server: Server;
let origin = '';
let context: BrowserContext | undefined;
let profile = '';

describe.skipIf(skipReason !== '')(`the documentation site in headless Chromium${skipReason}`, () => {
  beforeAll(async () => {
    server = createServer((request, response) => {
      const file = fileOf(new URL(request.url ?? '/', 'http://localhost').pathname);
      if (!file) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': contentTypes[extname(file)] ?? 'application/octet-stream' });
      createReadStream(file).pipe(response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    profile = mkdtempSync(join(tmpdir(), 'deadbolt-docs-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath,
      headless: true,
      viewport: { width: 1280, height: 900 },
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
  });

  afterAll(async () => {
    await context?.close();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('renders every page with no error, and every local link, anchor and image resolves', async () => {
    const pages = siteFiles().filter((path) => path.endsWith('.html') && path !== '/404.html');
    expect(pages.length).toBeGreaterThan(20);
    const problems: string[] = [];
    const idsByPage = new Map<string, Set<string>>();
    const links: { from: string; href: string }[] = [];
    const queue = [...pages];
    // A few tabs at once: each page is a full load, and most of its time is waiting.
    const visitAll = async (): Promise<void> => {
      const page = await context!.newPage();
      let current = '';
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`${current}: console ${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`${current}: page error: ${e.message}`));
      // A prefetch cut short by the next navigation fails as ERR_ABORTED: our doing, not the site's.
      page.on('requestfailed', (r) => {
        if (r.failure()?.errorText !== 'net::ERR_ABORTED') problems.push(`${current}: request failed: ${r.url()}`);
      });
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`${current}: HTTP ${r.status()}: ${r.url()}`);
      });
      for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
        current = path;
        await page.goto(origin + path, { waitUntil: 'load' });
        // A string, so this file needs no DOM typings: it runs in the page.
        const found = await page.evaluate<{ ids: string[]; hrefs: string[]; brokenImages: string[] }>(`({
          ids: [...document.querySelectorAll('[id]')].map((e) => e.id),
          hrefs: [...document.querySelectorAll('a[href]')].map((a) => a.href),
          brokenImages: [...document.images].filter((img) => !img.complete || img.naturalWidth === 0).map((img) => img.src),
        })`);
        idsByPage.set(path, new Set(found.ids));
        for (const href of found.hrefs) links.push({ from: path, href });
        for (const src of found.brokenImages) problems.push(`${path}: image did not load: ${src}`);
      }
      await page.close();
    };
    await Promise.all([visitAll(), visitAll(), visitAll()]);
    for (const { from, href } of links) {
      const url = new URL(href);
      if (url.origin !== origin) continue;
      const file = fileOf(url.pathname);
      if (!file) {
        problems.push(`${from}: link to a missing page or file: ${url.pathname}`);
        continue;
      }
      if (!url.hash || url.hash === '#') continue;
      const target = `/${relative(dist, file).split('\\').join('/')}`;
      const ids = idsByPage.get(target);
      const id = decodeURIComponent(url.hash.slice(1));
      if (ids && !ids.has(id)) problems.push(`${from}: link to a missing anchor: ${target}#${id}`);
    }
    expect(problems).toEqual([]);
  });

  it('the local search finds "fence"', async () => {
    const page = await context!.newPage();
    await page.goto(`${origin}/index.html`, { waitUntil: 'load' });
    await page.locator('.VPNavBarSearch button').first().click();
    await page.locator('.VPLocalSearchBox input').fill('fence');
    const results = page.locator('.VPLocalSearchBox .results li');
    await results.first().waitFor({ state: 'visible', timeout: 10_000 });
    expect(await results.count()).toBeGreaterThan(0);
    expect((await results.allTextContents()).join(' ').toLowerCase()).toContain('fenc');
    await page.close();
  });
});
