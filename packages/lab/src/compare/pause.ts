import type { RunContext } from './run.js';
import { sleep } from './scenario-kit.js';

/**
 * Kleppmann's GC pause, as the primitives' scenarios use it: SIGSTOP the child client c0 (called as
 * it enters its first hold, after its check and before its write) for `ms`, then SIGCONT.
 */
export async function pauseFirstHolder(ctx: RunContext, label: string, ms: number): Promise<void> {
  const child = ctx.children[0];
  if (!child) throw new Error('a pause needs c0 in a child process');
  await ctx.fault(label, async () => {
    child.kill('SIGSTOP');
    await sleep(ms);
    child.kill('SIGCONT');
  });
}
