import { readFileSync } from 'node:fs';

/** uid and gid of a local account from /etc/passwd, or undefined. */
export function systemUser(name: string): { uid: number; gid: number } | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}
