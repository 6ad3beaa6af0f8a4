import { randomBytes } from 'node:crypto';

/** 32 lowercase hex characters, new per request (CONTRACT §1). */
export function newRequestId(): string {
  return randomBytes(16).toString('hex');
}
