import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { missingPackages } from './binaries.js';

/** What to do about missing server packages: nothing, run apt-get, or stop with a message. */
export type InstallPlan =
  | { readonly action: 'none' }
  | { readonly action: 'install'; readonly packages: readonly string[]; readonly command: string }
  | { readonly action: 'fail'; readonly message: string };

/**
 * Decides without side effects: apt-get only where it can run without asking (root on
 * Debian/Ubuntu); anywhere else the exact command to run, at once.
 */
export function planServerInstall(missing: readonly string[], machine: { root: boolean; debian: boolean }): InstallPlan {
  if (missing.length === 0) return { action: 'none' };
  const command = `apt-get install -y ${missing.join(' ')}`;
  if (machine.root && machine.debian) return { action: 'install', packages: missing, command };
  const how = machine.debian ? `sudo ${command}` : `install ${missing.join(', ')} with your package manager`;
  return {
    action: 'fail',
    message:
      `[deadbolt] no container engine is used and server binaries are missing (${missing.join(', ')}): ` +
      `run \`${how}\`, or start Docker/podman (set DOCKER_HOST) to use containers.`,
  };
}

/**
 * For the `process` provider on a fresh machine: installs the missing Debian server packages,
 * or throws the command to run; never leaves it to a test timeout later.
 */
export function ensureServerBinaries(): void {
  const plan = planServerInstall(missingPackages(), { root: process.getuid?.() === 0, debian: existsSync('/etc/debian_version') });
  if (plan.action === 'none') return;
  if (plan.action === 'fail') throw new Error(plan.message);
  process.stderr.write(`[deadbolt] installing server packages: ${plan.command}\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = (): number | null =>
    spawnSync('apt-get', ['install', '-y', ...plan.packages], { stdio: ['ignore', 'inherit', 'inherit'], env }).status;
  // A fresh machine may have no package lists yet: update once, only when the install fails.
  if (install() !== 0) {
    spawnSync('apt-get', ['update'], { stdio: ['ignore', 'inherit', 'inherit'], env });
    if (install() !== 0) throw new Error(`[deadbolt] \`${plan.command}\` failed; run it by hand and retry`);
  }
  const still = missingPackages();
  if (still.length > 0) throw new Error(`[deadbolt] after \`${plan.command}\`, still missing: ${still.join(', ')}`);
}
