/**
 * Signed approval decisions (issue 36, CONTRACT §9). Before the phone signs, it recomputes the
 * digest of exactly what the card shows (the command, or the diff, or the JSON of the input) and
 * refuses to sign when the relay's `digest` differs: a signature then always means "I saw this".
 * The signature is ECDSA P-256 / SHA-256 by the device's non-extractable key over
 * `deskrelay-approval:v1\n<sessionId>\n<callId>\n<decision>\n<digest>`; WebCrypto gives it in
 * IEEE P1363 form (r‖s, 64 bytes), sent base64url. The page and the service worker (a
 * notification's Allow / Deny) both sign through here, so it uses nothing a worker lacks.
 */
import type { Decision, DecisionBody, PendingApproval } from '../../../server/src/protocol';
import { actionMessage, approvalMessage, approvalShows, type ActionSignature, type SignedAction } from '../../../server/src/protocol/agent';

export type { Decision };
/** The text a decision's signature covers: the protocol's, so the relay verifies exactly what the phone signs. */
export { approvalMessage, type SignedAction };

/** An approval as the events stream (and the session's `pending`) carries it; a relay before issue 36 sent no digest. */
export type SignableApproval = Pick<PendingApproval, 'callId' | 'input' | 'diff' | 'command'> & Partial<Pick<PendingApproval, 'tool' | 'digest'>>;

export const DIGEST_MISMATCH_MESSAGE =
  'This phone will not sign this: what the card shows is not what the desktop asked about (its fingerprint differs). Stop the session or deny it at the desk, and check the connection between this phone and the desktop.';

export class DigestMismatchError extends Error {
  constructor() {
    super(DIGEST_MISMATCH_MESSAGE);
  }
}

/** What the card shows, as its digest covers it: the protocol's approvalShows, the relay's own. */
export const shownText: (a: SignableApproval) => string = approvalShows;

export async function sha256Hex(text: string): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return Array.from(hash, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Whether the relay's digest is the digest of what the card shows. */
export async function digestMatches(a: SignableApproval): Promise<boolean> {
  return typeof a.digest === 'string' && a.digest === (await sha256Hex(shownText(a)));
}

export function base64url(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * The body of `POST …/approvals/<callId>`. Without a digest (a relay from before signed
 * decisions) or without a key (a device kept from before keys) it is the bare decision, which a
 * relay that wants signatures refuses with its own message. Throws DigestMismatchError, sending
 * nothing, when the digest is not that of what the card shows.
 */
export async function decisionBody(
  privateKey: CryptoKey | null | undefined,
  sessionId: string,
  a: SignableApproval,
  decision: Decision,
): Promise<DecisionBody> {
  if (a.digest === undefined || !privateKey) return { decision };
  if (!(await digestMatches(a))) throw new DigestMismatchError();
  const data = new TextEncoder().encode(approvalMessage(sessionId, a.callId, decision, a.digest));
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, data);
  return { decision, signature: base64url(new Uint8Array(signature)) };
}

/** `{signature, issuedAt}` over the action by this phone's key, now; nothing without a key (a relay that wants one says so). */
export async function actionSignature(privateKey: CryptoKey | null | undefined, action: SignedAction, sessionId: string, ...subject: string[]): Promise<ActionSignature> {
  if (!privateKey) return {};
  const issuedAt = new Date().toISOString();
  const data = new TextEncoder().encode(actionMessage(action, sessionId, issuedAt, ...subject));
  return { signature: base64url(new Uint8Array(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, data))), issuedAt };
}
