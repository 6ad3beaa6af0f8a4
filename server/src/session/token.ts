import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** `dr_` + 43 base64url characters of 32 random bytes (CONTRACT §1). */
export function newToken(): string {
  return `dr_${randomBytes(32).toString('base64url')}`;
}

/**
 * Writes through a private temp file and a rename, so a reader never sees a half-written
 * token and the file is never readable by others, not even for a moment.
 */
export async function writeTokenFile(path: string, token: string): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const temp = join(dir, `.token.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(`${token}\n`, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

export async function removeTokenFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
