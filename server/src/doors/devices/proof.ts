/**
 * Proof of possession at registration: a re-registration of a known key hands that device a new
 * token (and ends the old one), so a pairing token or code plus a device's public key must not
 * be enough; the sender signs a fresh statement with the key. Each (key, issuedAt) is taken once
 * within the window, so a captured request cannot be sent again.
 */
import { HttpError } from '../../http/errors';
import { registrationMessage } from '../../protocol';
import { verifySigned, type DevicePublicKey } from '../../store/devices';
import { fresh, issuedAtMs, tooManySigned, type TakenOnce } from '../takenOnce';

const PROOF_SHAPE = '"proof" must be {"issuedAt":"<ISO 8601 UTC, now>","signature":"<base64url P1363 signature by the key over deskrelay-register:v1\\n<x>\\n<y>\\n<name>\\n<issuedAt>>"}';

const badProof = (why: string) => new HttpError(403, 'device.bad_proof', `The registration's proof ${why}; sign a new one with this device's key and send it within 5 minutes.`);

/**
 * Checks `body.proof` for `publicKey` and the name as sent: 400 when it is missing or malformed
 * (403 device.proof_required when the key is a registered device's), 403 device.bad_proof when
 * it is stale, used or does not verify.
 */
export async function checkProof(body: Record<string, unknown>, publicKey: DevicePublicKey, known: boolean, seen: TakenOnce, now: number): Promise<void> {
  const proof = body.proof;
  if (proof === undefined) {
    if (known) throw new HttpError(403, 'device.proof_required', `This key is already a device's: registering it again needs proof of holding its private key. ${PROOF_SHAPE}.`);
    throw new HttpError(400, 'request.invalid_body', `A "publicKey" needs a "proof": ${PROOF_SHAPE}.`);
  }
  const { issuedAt, signature } = (typeof proof === 'object' && proof !== null ? proof : {}) as Record<string, unknown>;
  const at = issuedAtMs(issuedAt);
  if (typeof signature !== 'string' || typeof issuedAt !== 'string' || Number.isNaN(at)) throw new HttpError(400, 'request.invalid_body', `${PROOF_SHAPE}.`);
  if (!fresh(at, now)) throw badProof('was not made within 5 minutes of the desktop\'s clock (check both clocks)');
  if (!(await verifySigned(publicKey, signature, registrationMessage(publicKey.x, publicKey.y, body.name as string, issuedAt)))) throw badProof('does not verify with this key');
  const taking = seen.take(`${publicKey.x}.${publicKey.y}.${at}`, at, now);
  if (taking === 'used') throw badProof('was used before');
  if (taking === 'full') throw tooManySigned('no device was registered');
}
