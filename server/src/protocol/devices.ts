/** Devices (issues 26, 36; CONTRACT §9): a paired phone, its token and its key. */

/** The door's paths a phone calls (the desk's own are in desk.ts). */
export const DEVICE_PATHS = /* @__PURE__ */ Object.freeze({
  /** POST `{"name"}` with the pairing token: registers this client as a device; GET lists them. */
  devices: '/v1/devices',
  /** POST `{"code","name","publicKey"?,"proof"?}` with no token: pairs with the desk's one-time code. */
  deviceClaim: '/v1/devices/claim',
  /** PATCH `{"name"}` renames, DELETE removes. */
  device: '/v1/devices/:id',
});

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

/** A device token starts with this; the pairing token with `dr_`. */
export const DEVICE_TOKEN_PREFIX = 'drd_';

/** `POST /v1/devices`'s (and the claim's) answer: the device's id and its own token (a secret, shown once). */
export interface DeviceRegistration {
  id: string;
  token: string;
}

/** One entry of `GET /v1/devices`. Times are ISO 8601; `current` marks the device asking. */
export interface DeviceInfo {
  id: string;
  name: string;
  createdAt: string;
  lastSeen: string;
  connected: boolean;
  current: boolean;
  /** The device registered a public key (its agent decisions can be signed). */
  hasKey: boolean;
  /** The desk allowed it the agent (true), denied it or was never asked (false), or its request waits for the desk ("pending"). */
  agent: boolean | 'pending';
}

/** What a revoked device's open streams and sockets end with, and what its client shows. */
export const DEVICE_REMOVED_MESSAGE = 'The desktop removed this device; scan the pairing code again.';

/** The pairing payload (CONTRACT §8): exactly these two fields. A secret. */
export interface PairingPayload {
  url: string;
  token: string;
}
