/**
 * This phone as a device of the desktop (issue 26): it registers with the pairing token once and
 * uses its own device token from then on; "Unpair" removes itself. A relay without devices (an
 * older desktop) answers 404/405 to the registration, and the phone keeps the pairing token, as
 * before. The UI wiring (connection.ts: pairing, Settings) uses these; they hold no state of their own.
 */
import { ApiError, apiError, AUTH_MESSAGE, bearer, UNREACHABLE_MESSAGE } from './api';
import { DEVICE_REMOVED_MESSAGE, DEVICE_TOKEN_PREFIX, PATHS, type DeviceInfo, type DeviceRegistration } from '../../server/src/protocol';

export { DEVICE_REMOVED_MESSAGE };

/** What the phone says when the desk removed it (or forgot it, or restarted without remembering it). */
export const PHONE_REMOVED_MESSAGE = 'This phone was removed from the desktop; scan the pairing code again.';
/** The failure code a reply gets for it (describeFailure): no Retry, a "Pair again" instead. */
export const PHONE_REMOVED_CODE = 'device.removed';

export const isDeviceToken = (token: string) => token.startsWith(DEVICE_TOKEN_PREFIX);

/** What a 401 means for this token: a device token was removed (or forgotten), a pairing token is stale. */
export const authMessage = (token: string) => (isDeviceToken(token) ? PHONE_REMOVED_MESSAGE : AUTH_MESSAGE);

/** Whether a stream's terminal error is the relay ending it because the desk removed this device. */
export const isRemovalMessage = (message: string) => message === DEVICE_REMOVED_MESSAGE || message === PHONE_REMOVED_MESSAGE;

/** A non-2xx answer for a request made with `token`, its 401 worded for a removed device. */
export async function deviceAwareError(res: Response, token: string): Promise<ApiError> {
  const err = await apiError(res);
  return err.status === 401 ? new ApiError(authMessage(token), 401, err.code) : err;
}

/** A name the user can change: the device and the browser, e.g. "iPhone Safari", "Android Chrome". */
export function defaultDeviceName(userAgent: string): string {
  const ua = userAgent;
  const device = /iPhone/.test(ua)
    ? 'iPhone'
    : /iPad/.test(ua) || (/Macintosh/.test(ua) && /Mobile\//.test(ua))
      ? 'iPad'
      : /Android/.test(ua)
        ? 'Android'
        : /Windows/.test(ua)
          ? 'Windows'
          : /Macintosh|Mac OS X/.test(ua)
            ? 'Mac'
            : /CrOS/.test(ua)
              ? 'Chromebook'
              : /Linux/.test(ua)
                ? 'Linux'
                : 'Phone';
  // Order matters: Edge and Opera say Chrome too, Chrome says Safari, iOS browsers say Safari.
  const browser = /Edg(A|iOS)?\//.test(ua)
    ? 'Edge'
    : /OPR\/|Opera/.test(ua)
      ? 'Opera'
      : /Firefox\/|FxiOS\//.test(ua)
        ? 'Firefox'
        : /SamsungBrowser\//.test(ua)
          ? 'Samsung Internet'
          : /Chrome\/|CriOS\//.test(ua)
            ? 'Chrome'
            : /Safari\//.test(ua)
              ? 'Safari'
              : 'Browser';
  return `${device} ${browser}`;
}

async function call(input: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(input, { ...init, cache: 'no-store' });
  } catch {
    throw new ApiError(UNREACHABLE_MESSAGE, 0, 'network');
  }
}

/**
 * Registers this phone with the pairing token. Undefined when the relay has no devices (404 or
 * 405): keep the pairing token. Throws ApiError otherwise (401: the pairing token is stale).
 */
export async function registerDevice(pairingToken: string, name: string): Promise<DeviceRegistration | undefined> {
  const res = await call(PATHS.devices, { method: 'POST', headers: { ...bearer(pairingToken), 'Content-Type': 'application/json' }, body: JSON.stringify({ name }) });
  if (res.status === 404 || res.status === 405) return undefined;
  if (res.status !== 201) throw await apiError(res);
  const body = (await res.json()) as Partial<DeviceRegistration>;
  if (typeof body.id !== 'string' || typeof body.token !== 'string' || !isDeviceToken(body.token)) {
    throw new ApiError('The desktop answered the registration, but not with a device token.', res.status, 'wrong_service');
  }
  return { id: body.id, token: body.token };
}

/** The desktop's devices (this one marked `current`). */
export async function listDevices(token: string): Promise<DeviceInfo[]> {
  const res = await call(PATHS.devices, { headers: bearer(token) });
  if (!res.ok) throw await deviceAwareError(res, token);
  return (await res.json()) as DeviceInfo[];
}

/**
 * Renames this device (Settings). Undefined when the relay cannot rename devices (404 or 405 from
 * an older desktop; a removed device is a 401, not a 404, since its token no longer opens the door).
 */
export async function renameDevice(token: string, id: string, name: string): Promise<DeviceInfo | undefined> {
  const res = await call(`${PATHS.devices}/${encodeURIComponent(id)}`, { method: 'PATCH', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify({ name }) });
  if (res.status === 404 || res.status === 405) return undefined;
  if (!res.ok) throw await deviceAwareError(res, token);
  return (await res.json()) as DeviceInfo;
}

/** "Unpair": removes this device at the desktop. Already removed (401, 404) counts as done. */
export async function unpairDevice(token: string, id: string): Promise<void> {
  const res = await call(`${PATHS.devices}/${encodeURIComponent(id)}`, { method: 'DELETE', headers: bearer(token) });
  if (res.status === 204 || res.status === 401 || res.status === 404) return;
  throw await deviceAwareError(res, token);
}
