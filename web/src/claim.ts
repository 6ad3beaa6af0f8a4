/**
 * Pairing with the one-time code the desk shows (issue 36): `deskrelay pair`, or VS Code's
 * "DeskRelay: Pair a Phone with a Code". `POST /v1/devices/claim` takes no token (the code is
 * the secret) and answers the device, as a registration does. Only the pairing screen uses it,
 * so it loads with that screen, not with the app.
 */
import { DEVICE_PATHS } from '../../server/src/protocol/devices';
import { ApiError, apiError } from './api';
import { postJson, registration } from './devices';
import type { DeviceRegistration } from '../../server/src/protocol';
import type { SignedKey } from './registration';

/** What a refused pairing code means, in plain words. */
export const CODE_MESSAGES = {
  invalid: 'That code is wrong, used or expired. Check it, or ask the desk for a new one (deskrelay pair, or DeskRelay: Pair a Phone with a Code).',
  tooMany: (seconds: number) => `Too many wrong codes were tried. Wait ${seconds > 90 ? `${Math.ceil(seconds / 60)} minutes` : `${seconds} seconds`}, then try again.`,
  format: 'A pairing code has 8 letters and digits, as the desk shows it.',
};

/** A pairing code as typed: any case, spaces and dashes dropped. Null unless 8 letters and digits. */
export function normalizeCode(typed: string): string | null {
  const code = typed.replace(/[\s-]+/g, '').toUpperCase();
  return /^[A-Z0-9]{8}$/.test(code) ? code : null;
}

/**
 * Claims a pairing code the desk shows (`deskrelay pair`): no token at all, the code is the
 * secret. Throws ApiError with the plain words for a wrong code and for too many tries.
 */
export async function claimDevice(code: string, name: string, key?: SignedKey): Promise<DeviceRegistration> {
  const res = await postJson(DEVICE_PATHS.deviceClaim, { code, name, ...key });
  if (res.status === 201) return registration(res, (await res.json()) as Partial<DeviceRegistration>);
  const err = await apiError(res);
  if (err.code === 'auth.invalid_code' || (res.status === 401 && err.code !== 'auth.too_many_attempts')) throw new ApiError(CODE_MESSAGES.invalid, 401, 'auth.invalid_code');
  if (err.code === 'auth.too_many_attempts' || res.status === 429) {
    const after = Number(res.headers.get('Retry-After'));
    throw new ApiError(CODE_MESSAGES.tooMany(Number.isFinite(after) && after > 0 ? Math.ceil(after) : 60), 429, 'auth.too_many_attempts');
  }
  if (res.status === 404 || res.status === 405) throw new ApiError('This desktop cannot pair with a code yet: scan its QR code or paste its pairing JSON.', res.status, 'wrong_service');
  throw err;
}

