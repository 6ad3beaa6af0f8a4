/**
 * Allow / Deny on an `agent_needs_you` notification (issue 36), run by the service worker: the
 * push names only the session and the call, so the worker reads the device and its key from
 * IndexedDB, fetches the waiting approval (its text and digest) from the session, checks the
 * digest against that text, signs and posts the decision, as the page's card does. Nothing but
 * fetch, IndexedDB and WebCrypto: it runs in a worker.
 */
import { readDevice, readKeys } from '../keep';
import { decisionBody, DigestMismatchError, type Decision, type SignableApproval } from './sign';

export interface NotifiedOutcome {
  ok: boolean;
  /** What the follow-up notification says when it did not go through. */
  message: string;
}

const fail = (message: string): NotifiedOutcome => ({ ok: false, message });

async function errorMessage(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { error?: { message?: unknown } } | null;
    if (typeof body?.error?.message === 'string' && body.error.message) return body.error.message;
  } catch {
    /* not the relay's error body */
  }
  return `The desktop answered HTTP ${res.status}.`;
}

export async function decideNotified(sessionId: string, callId: string, decision: Extract<Decision, 'allow' | 'deny'>): Promise<NotifiedOutcome> {
  const [device, keys] = await Promise.all([readDevice(), readKeys()]);
  if (!device) return fail('This phone is not paired any more. Open DeskRelay to pair it.');
  const auth = { Authorization: `Bearer ${device.token}` };
  const path = `/v1/agent/sessions/${encodeURIComponent(sessionId)}`;
  let approval: SignableApproval | undefined;
  try {
    const res = await fetch(path, { headers: auth, cache: 'no-store' });
    if (!res.ok) return fail(await errorMessage(res));
    const snapshot = (await res.json()) as { pending?: SignableApproval[] };
    approval = snapshot.pending?.find((p) => p.callId === callId);
    if (!approval) return fail('That request was already answered (at the desk or on another device).');
    const body = await decisionBody(keys?.privateKey, sessionId, approval, decision);
    const sent = await fetch(`${path}/approvals/${encodeURIComponent(callId)}`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      cache: 'no-store',
    });
    if (sent.ok) return { ok: true, message: '' };
    if (sent.status === 409) return fail('That request was already answered (at the desk or on another device).');
    return fail(await errorMessage(sent));
  } catch (err) {
    if (err instanceof DigestMismatchError) return fail(err.message);
    return fail('The desktop could not be reached. Open DeskRelay to answer.');
  }
}
