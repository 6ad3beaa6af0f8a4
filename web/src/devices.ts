/**
 * This phone as a device of the desktop (issues 26, 36): it registers once, with the pairing
 * token or a one-time pairing code, sending its public key, and uses its own device token from
 * then on; Settings list the desk's devices, rename this one and remove another; "Unpair" removes
 * itself. The UI wiring (connection.ts, pairScreen.ts, deviceList.ts) uses these; they hold no state.
 */
import { ApiError, apiError, AUTH_MESSAGE, bearer, UNREACHABLE_MESSAGE } from './api';
import type { DeviceInfo, DeviceRegistration } from '../../server/src/protocol';
import { DEVICE_PATHS, DEVICE_REMOVED_MESSAGE, DEVICE_TOKEN_PREFIX } from '../../server/src/protocol/devices';
import { pathTo } from '../../server/src/protocol/paths';
import type { SignedKey } from './registration';

export { DEVICE_REMOVED_MESSAGE };

/** What the phone says when the desk removed it (`401 auth.device_removed`, or its stream ended for it): no Retry. */
export const PHONE_REMOVED_MESSAGE = 'This phone was removed at the desk. To use it again, pair it again.';
/**
 * A device token the desk does not know (`401 auth.invalid_token`): devices outlive restarts, so
 * the desk forgot them on purpose, when its token was rotated.
 */
export const PHONE_FORGOTTEN_MESSAGE = 'The desktop no longer knows this phone: its token was rotated and its devices forgotten. Pair again with the new QR code or a pairing code.';
/** The failure code a reply gets for it (describeFailure): no Retry, a "Pair again" instead. */
export const PHONE_REMOVED_CODE = 'device.removed';
/** The relay's code for a revoked device's token. */
export const DEVICE_REMOVED_CODE = 'auth.device_removed';

export const isDeviceToken = (token: string) => token.startsWith(DEVICE_TOKEN_PREFIX);

/**
 * What a 401 means, by its code and the token sent: the desk removed this phone, the desk forgot
 * its devices (token rotated), or a pairing link is stale (the relay restarted or rotated).
 */
export function authMessage(token: string, code = ''): string {
  if (code === DEVICE_REMOVED_CODE) return PHONE_REMOVED_MESSAGE;
  return isDeviceToken(token) ? PHONE_FORGOTTEN_MESSAGE : AUTH_MESSAGE;
}

/** Whether a stream's terminal error is the relay ending it because the desk removed this device. */
export const isRemovalMessage = (message: string) => message === DEVICE_REMOVED_MESSAGE || message === PHONE_REMOVED_MESSAGE;

/** A non-2xx answer for a request made with `token`, its 401 worded for what happened to this phone. */
export async function deviceAwareError(res: Response, token: string): Promise<ApiError> {
  const err = await apiError(res);
  return err.status === 401 ? new ApiError(authMessage(token, err.code), 401, err.code) : err;
}

async function call(input: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(input, { ...init, cache: 'no-store' });
  } catch {
    throw new ApiError(UNREACHABLE_MESSAGE, 0, 'network');
  }
}

export function registration(res: Response, body: Partial<DeviceRegistration>): DeviceRegistration {
  if (typeof body.id !== 'string' || typeof body.token !== 'string' || !isDeviceToken(body.token)) {
    throw new ApiError('The desktop answered the registration, but not with a device token.', res.status, 'wrong_service');
  }
  return { id: body.id, token: body.token };
}

export const postJson = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  call(path, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

/**
 * Registers this phone with the pairing token (used once: the caller then forgets it), with its
 * public key and proof of holding it: the same key again is the same device at the desk, with a new token. Undefined
 * when the relay has no devices (404 or 405). Throws ApiError otherwise (401: the pairing token is stale).
 */
export async function registerDevice(pairingToken: string, name: string, key?: SignedKey): Promise<DeviceRegistration | undefined> {
  const res = await postJson(DEVICE_PATHS.devices, { name, ...key }, bearer(pairingToken));
  if (res.status === 404 || res.status === 405) return undefined;
  if (res.status !== 201) throw await apiError(res);
  return registration(res, (await res.json()) as Partial<DeviceRegistration>);
}

/** `GET /v1/devices` as the phone reads it: issue 36 adds whether a device has a key and agent access. */
export type ListedDevice = DeviceInfo & { hasKey?: boolean; agent?: unknown };

/** The desktop's devices (this one marked `current`). */
export async function listDevices(token: string): Promise<ListedDevice[]> {
  const res = await call(DEVICE_PATHS.devices, { headers: bearer(token) });
  if (!res.ok) throw await deviceAwareError(res, token);
  return (await res.json()) as ListedDevice[];
}

/** Removes another device (Settings → Devices); one already gone (404) counts as done; a 403 keeps the desk's words. */
export async function removeDevice(token: string, id: string): Promise<void> {
  const res = await call(pathTo(DEVICE_PATHS.device, { id }), { method: 'DELETE', headers: bearer(token) });
  if (res.status === 204 || res.status === 404) return;
  throw await deviceAwareError(res, token);
}

/**
 * Renames this device (Settings). Undefined when the relay cannot rename devices (404 or 405 from
 * an older desktop; a removed device is a 401, not a 404, since its token no longer opens the door).
 */
export async function renameDevice(token: string, id: string, name: string): Promise<DeviceInfo | undefined> {
  const res = await call(pathTo(DEVICE_PATHS.device, { id }), { method: 'PATCH', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify({ name }) });
  if (res.status === 404 || res.status === 405) return undefined;
  if (!res.ok) throw await deviceAwareError(res, token);
  return (await res.json()) as DeviceInfo;
}

/**
 * Removes a device at the desktop: this one ("Unpair"; already removed, 401 or 404, counts as
 * done), or another (Settings → Devices), which the desk allows to a device with agent access.
 */
export async function unpairDevice(token: string, id: string): Promise<void> {
  const res = await call(pathTo(DEVICE_PATHS.device, { id }), { method: 'DELETE', headers: bearer(token) });
  if (res.status === 204 || res.status === 401 || res.status === 404) return;
  throw await deviceAwareError(res, token);
}
