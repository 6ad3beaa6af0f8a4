// Registration's proof of holding the key: its own file, so the phone's shell (which needs the
// device paths) does not carry what only the pairing chunks sign with.

/**
 * Proof that a registration's sender holds the private half of its `publicKey` (CONTRACT §9):
 * the key's signature (base64url of the 64-byte IEEE P1363 ECDSA P-256/SHA-256 signature) over
 * registrationMessage, made at `issuedAt` (ISO 8601 UTC). The relay takes it within
 * PROOF_WINDOW_MS of its clock, and each (key, issuedAt) once.
 */
export interface RegistrationProof {
  issuedAt: string;
  signature: string;
}

/** How far a proof's issuedAt may be from the relay's clock, either way. */
export const PROOF_WINDOW_MS = 5 * 60_000;

/** The exact string a registration's proof signs: the key's point, the name as sent, and when. */
export const registrationMessage = (x: string, y: string, name: string, issuedAt: string): string => `deskrelay-register:v1\n${x}\n${y}\n${name}\n${issuedAt}`;
