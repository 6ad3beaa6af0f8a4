import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids, drawn 4 KiB at a time: one randomBytes(16) per request cost the relay
 * an OpenSSL call and a getpid syscall on every accepted stream (bench/NOTES.md, issue 10).
 * The ids are the same: 16 bytes from the CSPRNG, never reused.
 */
const POOL = Buffer.alloc(4096);
let used = POOL.length;

/** 32 lowercase hex characters, new per request (CONTRACT §1). */
export function newRequestId(): string {
  if (used === POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const id = POOL.toString('hex', used, used + 16);
  used += 16;
  return id;
}
