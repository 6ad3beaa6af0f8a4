import type { IncomingMessage } from 'node:http';
import type { RelayContext, Route } from '../../http/context';
import { HttpError, serverStopping } from '../../http/errors';
import { sendJson, sendNoContent } from '../../http/json';
import { requestParams } from '../../http/route';
import { PATHS, type DeviceInfo, type DeviceRegistration } from '../../protocol';
import { CONNECTED_WINDOW_MS, cleanDeviceName, MAX_DEVICES, MAX_NAME_LENGTH, type DeviceRegistry, type DeviceSummary } from '../../store/devices';
import { type DoorFactory, readJsonBody } from '../door';

export const DEVICES_PATH = PATHS.devices;
export const DEVICE_PATH = '/v1/devices/{id}';

/** True while the device holds a chat or made a request within CONNECTED_WINDOW_MS. */
export function isConnected(device: DeviceSummary, ctx: Pick<RelayContext, 'chat'>, now = Date.now()): boolean {
  return ctx.chat.activeFor(device.id) > 0 || now - device.lastSeen < CONNECTED_WINDOW_MS;
}

export function deviceInfo(device: DeviceSummary, ctx: Pick<RelayContext, 'chat'>, current: string | undefined, now = Date.now()): DeviceInfo {
  return {
    id: device.id,
    name: device.name,
    createdAt: new Date(device.createdAt).toISOString(),
    lastSeen: new Date(device.lastSeen).toISOString(),
    connected: isConnected(device, ctx, now),
    current: device.id === current,
  };
}

const deviceNotFound = (id: string) => new HttpError(404, 'device.not_found', `No device "${id}" is registered on the desktop (GET ${DEVICES_PATH} lists them).`);

/** The device the path names: 404 when it is not registered, 403 (`forbidden`) when a phone names another device. */
function pathDevice(req: IncomingMessage, ctx: RelayContext, forbidden: string): { id: string; current: string | undefined; devices: DeviceRegistry } {
  const id = requestParams(DEVICE_PATH, req).id ?? '';
  const current = ctx.state(req).device;
  const devices = registry(ctx);
  if (!devices.get(id)) throw deviceNotFound(id);
  if (current !== undefined && current !== id) throw new HttpError(403, 'device.forbidden', forbidden);
  return { id, current, devices };
}

function registry(ctx: RelayContext): DeviceRegistry {
  const devices = ctx.admission.devices;
  if (!devices) throw serverStopping();
  return devices;
}

/**
 * Paired phones as devices (issue 26): a client holding the pairing token registers itself and
 * gets its own token; the list, renaming and removal are for the desk and for the device itself. Removal
 * is the registry's: the relay ends the device's chats and the push door drops its subscriptions.
 */
export const devicesDoor: DoorFactory = () => {
  const register: Route = {
    method: 'POST',
    path: DEVICES_PATH,
    auth: true,
    async handle(req, res, ctx) {
      // A device token may not mint more: a removed phone's siblings would survive its removal.
      if (ctx.state(req).device !== undefined) {
        throw new HttpError(403, 'device.forbidden', 'Only the pairing token can register a device; this client is already one.');
      }
      const { json } = await readJsonBody(req, ctx);
      const body = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
      const name = cleanDeviceName(body?.name);
      if (!name) {
        throw new HttpError(400, 'request.invalid_body', `The body must be {"name":"…"}: a name of 1 to ${MAX_NAME_LENGTH} characters on one line (e.g. "iPhone Safari").`);
      }
      const devices = registry(ctx);
      if (devices.size >= MAX_DEVICES) {
        throw new HttpError(409, 'device.too_many', `The desktop keeps at most ${MAX_DEVICES} devices; remove some (DeskRelay: Manage Devices, or deskrelay devices revoke).`);
      }
      let registered;
      try {
        registered = await devices.register(name);
      } catch (err) {
        ctx.options.logger.error(`devices: could not save the devices file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
        throw new HttpError(500, 'server.internal_error', 'The desktop could not save the new device.');
      }
      if (ctx.admission.stopping) throw serverStopping();
      const answer: DeviceRegistration = { id: registered.device.id, token: registered.token };
      res.setHeader('Location', `${DEVICES_PATH}/${registered.device.id}`);
      sendJson(res, 201, answer);
    },
  };

  const list: Route = {
    method: 'GET',
    path: DEVICES_PATH,
    auth: true,
    handle(req, res, ctx) {
      const now = Date.now();
      const current = ctx.state(req).device;
      sendJson(res, 200, registry(ctx).list().map((d) => deviceInfo(d, ctx, current, now)));
    },
  };

  const rename: Route = {
    method: 'PATCH',
    path: DEVICE_PATH,
    auth: true,
    async handle(req: IncomingMessage, res, ctx) {
      // A phone names itself (its Settings); it may not relabel another phone the desk would then misjudge.
      const { id, current, devices } = pathDevice(req, ctx, 'A device can rename only itself; rename other devices at the desktop.');
      const { json } = await readJsonBody(req, ctx);
      const body = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
      const name = cleanDeviceName(body?.name);
      if (!name) {
        throw new HttpError(400, 'request.invalid_body', `The body must be {"name":"…"}: a name of 1 to ${MAX_NAME_LENGTH} characters on one line (e.g. "iPhone Safari").`);
      }
      let renamed;
      try {
        renamed = await devices.rename(id, name);
      } catch (err) {
        ctx.options.logger.error(`devices: could not save the devices file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
        throw new HttpError(500, 'server.internal_error', 'The desktop could not save the new name.');
      }
      // Removed while the body was read: its token no longer counts, say so as for any request.
      if (!renamed) throw deviceNotFound(id);
      sendJson(res, 200, deviceInfo(renamed, ctx, current));
    },
  };

  const revoke: Route = {
    method: 'DELETE',
    path: DEVICE_PATH,
    auth: true,
    async handle(req: IncomingMessage, res, ctx) {
      // A phone may unpair itself; removing others is for the desk (the pairing token).
      const { id, current, devices } = pathDevice(req, ctx, 'A device can remove only itself; remove other devices at the desktop.');
      // Its Unpair still gets its 204 while everything else the device holds ends.
      if (current === id) ctx.state(req).removesItsDevice = true;
      try {
        await devices.revoke(id);
      } catch (err) {
        // Already gone from memory (its token no longer works); only the file is behind.
        ctx.options.logger.error(`devices: removed ${id}, but could not save the devices file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      sendNoContent(res);
    },
  };

  return { routes: [register, list, rename, revoke] };
};
