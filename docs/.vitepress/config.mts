import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DefaultTheme, defineConfig } from 'vitepress';

// The API reference's sidebar, written by TypeDoc (typedoc-vitepress-theme) into docs/api.
const apiSidebarFile = fileURLToPath(new URL('../api/typedoc-sidebar.json', import.meta.url));
const apiSidebar: DefaultTheme.SidebarItem[] = existsSync(apiSidebarFile) ? JSON.parse(readFileSync(apiSidebarFile, 'utf8')) : [];

const guide: DefaultTheme.SidebarItem[] = [
  {
    text: 'Guide',
    items: [
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Configuration', link: '/configuration' },
      { text: 'Choosing a backend', link: '/choosing-a-backend' },
      { text: 'Fencing end to end', link: '/fencing' },
      { text: 'Operating Deadbolt', link: '/operating' },
      { text: 'Performance', link: '/performance' },
      { text: 'FAQ', link: '/faq' },
    ],
  },
  {
    text: 'Primitives',
    items: [
      { text: 'Mutex', link: '/primitives/mutex' },
      { text: 'Read-write lock', link: '/primitives/read-write-lock' },
      { text: 'Semaphore', link: '/primitives/semaphore' },
      { text: 'Multi-key lock', link: '/primitives/multi-key-lock' },
      { text: 'Leader election', link: '/primitives/election' },
      { text: 'Run once', link: '/primitives/run-once' },
    ],
  },
  {
    text: 'Backends',
    items: [
      { text: 'Redis', link: '/backends/redis' },
      { text: 'PostgreSQL', link: '/backends/postgres' },
      { text: 'ZooKeeper', link: '/backends/zookeeper' },
      { text: 'etcd', link: '/backends/etcd' },
      { text: 'Memcached', link: '/backends/memcached' },
      { text: 'Memory', link: '/backends/memory' },
    ],
  },
  {
    text: 'Extending',
    items: [
      { text: 'Writing an adapter', link: '/adapters' },
      { text: 'API reference', link: '/api/' },
    ],
  },
];

export default defineConfig({
  title: 'Deadbolt',
  description: 'Distributed locks for Node: one API over Redis, PostgreSQL, ZooKeeper, etcd, Memcached and memory',
  lang: 'en-US',
  head: [['link', { rel: 'icon', type: 'image/svg+xml', href: '/favicon.svg' }]],
  // The site builds and runs offline: no analytics, no remote fonts, search runs in the page.
  srcExclude: ['test/**', '.typedoc/**'],
  lastUpdated: false,
  cleanUrls: false,
  vite: { build: { chunkSizeWarningLimit: 4096 } },
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/getting-started' },
      { text: 'Backends', link: '/choosing-a-backend' },
      { text: 'API', link: '/api/' },
      { text: 'FAQ', link: '/faq' },
    ],
    sidebar: {
      '/api/': [{ text: 'API reference', link: '/api/', items: apiSidebar }, ...guide],
      '/': guide,
    },
    search: { provider: 'local' },
    outline: { level: [2, 3] },
  },
});
