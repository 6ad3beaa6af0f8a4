import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { writePrivateFile } from '../store/file';

/** `dr_` + 43 base64url characters of 32 random bytes (CONTRACT §1). */
export function newToken(): string {
  return `dr_${randomBytes(32).toString('base64url')}`;
}

/** The token file is private like every secret file: written whole, owner-only (store/file.ts). */
export async function writeTokenFile(path: string, token: string): Promise<void> {
  await writePrivateFile(path, `${token}\n`);
}

export async function removeTokenFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
