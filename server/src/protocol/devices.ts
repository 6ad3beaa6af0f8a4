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
