import { webcrypto } from 'node:crypto';
import { approvalMessage, type Decision } from '../../protocol';
import { importPublicKey, type DevicePublicKey } from '../../store/devices';

/** What a device signs to decide one call (CONTRACT §9): the call, the decision and the digest of what its card showed. */
export interface SignedDecision {
  sessionId: string;
  callId: string;
  decision: Decision;
  digest: string;
}

/** The exact UTF-8 string a decision's signature covers. */
export const decisionMessage = ({ sessionId, callId, decision, digest }: SignedDecision) => approvalMessage(sessionId, callId, decision, digest);

const SIGNATURE = /^[A-Za-z0-9_-]{86}$/;

/**
 * Whether `signature` (base64url of the 64-byte IEEE P1363 ECDSA P-256/SHA-256 signature, as
 * WebCrypto makes it) is the device's over exactly this decision. A signature for another call,
 * another decision, another card or by another key does not verify: a stolen device token
 * alone cannot approve anything.
 */
export async function verifyDecision(key: DevicePublicKey, signature: string, decision: SignedDecision): Promise<boolean> {
  if (!SIGNATURE.test(signature)) return false;
  const bytes = Buffer.from(signature, 'base64url');
  if (bytes.length !== 64) return false;
  try {
    return await webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, await importPublicKey(key), bytes, new TextEncoder().encode(decisionMessage(decision)));
  } catch {
    return false;
  }
}
