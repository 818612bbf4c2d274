import { defineConfig, mergeConfig, type ViteUserConfig } from 'vitest/config';

/**
 * The one vitest configuration every package starts from. 'unit': in-process tests only.
 * 'servers': tests on real servers, started through the conformance fixtures' global setup
 * (containers or processes, decided once per run; missing binaries installed; leftovers reaped),
 * one file at a time, with deadlines generous enough for a shared 2-core machine.
 */
export function packageConfig(
  kind: 'unit' | 'servers',
  overrides: ViteUserConfig = {},
  globalSetup = '@deadbolt/conformance/global-setup',
): ViteUserConfig {
  const base = defineConfig({
    test:
      kind === 'unit'
        ? { include: ['test/**/*.test.ts'], testTimeout: 10_000 }
        : { include: ['test/**/*.test.ts'], globalSetup: [globalSetup], fileParallelism: false, testTimeout: 60_000, hookTimeout: 120_000 },
  });
  return mergeConfig(base, overrides);
}
