import type { ServerResponse } from 'node:http';
import type { ContextSlice, DoorRoute, RelayContext } from '../context';
import { HttpError, serverStopping } from '../../http/errors';
import { sendJson, sendNoContent } from '../../http/writers';
import { authenticateDesk } from '../../http/admission';
import type { RouteRequest } from '../../http/route';
import { PATHS, type DeviceInfo, type DeviceRegistration } from '../../protocol';
import { CONNECTED_WINDOW_MS, cleanDeviceName, cleanPublicKey, MAX_DEVICES, MAX_NAME_LENGTH, type DevicePublicKey, type DeviceRegistry, type DeviceSummary } from '../../store/devices';
import { CODE_LENGTH, type ClaimOutcome } from '../../store/claimCodes';
import type { DoorFactory } from '../door';
import { readJsonBody } from '../../http/request';
import { checkProof } from './proof';
import { TakenOnce } from '../takenOnce';

export const DEVICES_PATH = PATHS.devices;
export const DEVICE_PATH = '/v1/devices/:id';
export const CLAIM_PATH = PATHS.deviceClaim;
/** The desk's own routes (the desk token): a new pairing code, a device's agent access. */
export const CODES_PATH = PATHS.deviceCodes;
export const DEVICE_AGENT_PATH = '/v1/devices/:id/agent';

/** What the devices door reads of the relay: the device registry, pairing codes and the token in force, bodies, request state, the chat service (who is connected), the clock and the log. */
export type DevicesContext = ContextSlice<'admission' | 'bodies' | 'state' | 'chat', 'bodyTimeoutMs' | 'clock' | 'logger'>;

const NAME_SHAPE = `a name of 1 to ${MAX_NAME_LENGTH} characters on one line (e.g. "iPhone Safari")`;
const KEY_SHAPE = '"publicKey" must be an ECDSA P-256 public key as a JWK: {"kty":"EC","crv":"P-256","x":"<base64url, 32 bytes>","y":"<base64url, 32 bytes>"}';

type Fields = { name: string; publicKey?: DevicePublicKey };

/** The name and optional public key of a registration or claim, by their shape only; 400 request.invalid_body naming the bad field. */
async function registrationFields(body: Record<string, unknown> | undefined, shape: string): Promise<Fields> {
  const name = cleanDeviceName(body?.name);
  if (!body || !name) throw new HttpError(400, 'request.invalid_body', `The body must be ${shape}: ${NAME_SHAPE}.`);
  if (body.publicKey === undefined) return { name };
  const publicKey = await cleanPublicKey(body.publicKey);
  if (!publicKey) throw new HttpError(400, 'request.invalid_body', `${KEY_SHAPE}.`);
  return { name, publicKey };
}

/** A key comes with proof that the sender holds its private half (proof.ts); its answers say whether the key is a device's, so only a caller with the token or the code hears them. */
async function proveKey(body: Record<string, unknown>, fields: Fields, ctx: DevicesContext, seen: TakenOnce): Promise<void> {
  if (fields.publicKey) await checkProof(body, fields.publicKey, registry(ctx).withKey(fields.publicKey) !== undefined, seen, ctx.options.clock?.() ?? Date.now());
}

/** Registers (or, for a key already known, gives that device a new token) and answers 201 {id, token}. */
async function registerAndAnswer(res: ServerResponse, ctx: DevicesContext, fields: Fields): Promise<void> {
  const devices = registry(ctx);
  if (devices.size >= MAX_DEVICES && !(fields.publicKey && devices.withKey(fields.publicKey))) {
    throw new HttpError(409, 'device.too_many', `The desktop keeps at most ${MAX_DEVICES} devices; remove some (DeskRelay: Manage Devices, or deskrelay devices revoke).`);
  }
  let registered;
  try {
    registered = await devices.register(fields.name, fields.publicKey);
  } catch (err) {
    ctx.options.logger.error(`devices: could not save the devices file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    throw new HttpError(500, 'server.internal_error', 'The desktop could not save the new device.');
  }
  if (ctx.admission.stopping) throw serverStopping();
  const answer: DeviceRegistration = { id: registered.device.id, token: registered.token };
  res.setHeader('Location', `${DEVICES_PATH}/${registered.device.id}`);
  sendJson(res, 201, answer);
}

const asObject = (json: unknown) => (typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined);

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
    hasKey: device.publicKey !== undefined,
    agent: device.agent === 'allowed' ? true : device.agent === 'asked' ? 'pending' : false,
  };
}

const tooManyAttempts = (retryAfterS: number) =>
  new HttpError(429, 'auth.too_many_attempts', `Too many wrong pairing codes were tried in the last minute; try again in ${retryAfterS} s.`, { 'Retry-After': String(retryAfterS) });

/** Throws the claim door's refusal of a code that is wrong, used, expired, or tried while guessing is paused. */
function codeTaken(outcome: ClaimOutcome): void {
  if (outcome.ok) return;
  if (outcome.reason === 'limited') throw tooManyAttempts(outcome.retryAfterS);
  throw new HttpError(401, 'auth.invalid_code', 'That pairing code is wrong, used or expired. Make a new one at the desk (deskrelay pair, or DeskRelay: Pair a Phone with a Code) and type it within 5 minutes.');
}

const deviceNotFound = (id: string) => new HttpError(404, 'device.not_found', `No device "${id}" is registered on the desktop (GET ${DEVICES_PATH} lists them).`);

/**
 * The device the path names: 404 when it is not registered, 403 (`forbidden`) when a phone names
 * another device, unless `agentMay` and the asking phone has the desk's leave to use the agent
 * (such a phone may cut a lost one off).
 */
function pathDevice(req: RouteRequest, ctx: DevicesContext, forbidden: string, agentMay = false): { id: string; current: string | undefined; devices: DeviceRegistry } {
  const id = req.params.id ?? '';
  const current = ctx.state(req).device;
  const devices = registry(ctx);
  if (!devices.get(id)) throw deviceNotFound(id);
  if (current !== undefined && current !== id && !(agentMay && devices.get(current)?.agent === 'allowed')) throw new HttpError(403, 'device.forbidden', forbidden);
  return { id, current, devices };
}

function registry(ctx: DevicesContext): DeviceRegistry {
  const devices = ctx.admission.devices;
  if (!devices) throw serverStopping();
  return devices;
}

/**
 * Paired phones as devices (issue 26): a client holding the pairing token registers itself and
 * gets its own token; the list, renaming and removal are for the desk and for the device itself. Removal
 * is the registry's: the relay ends the device's chats and the push door drops its subscriptions.
 */
export const devicesDoor: DoorFactory<DevicesContext> = () => {
  const seen = new TakenOnce();
  const register: DoorRoute<DevicesContext> = {
    method: 'POST',
    path: DEVICES_PATH,
    auth: true,
    async handle(req, res, ctx) {
      // A device token may not mint more: a removed phone's siblings would survive its removal.
      if (ctx.state(req).device !== undefined) {
        throw new HttpError(403, 'device.forbidden', 'Only the pairing token can register a device; this client is already one.');
      }
      const { json } = await readJsonBody(req, ctx);
      const body = asObject(json);
      const fields = await registrationFields(body, '{"name":"…","publicKey"?:{…},"proof"?:{…}}');
      await proveKey(body!, fields, ctx, seen);
      await registerAndAnswer(res, ctx, fields);
    },
  };

  // Pairing inside the installed app: the desk shows a one-time code, the phone sends it with no token.
  const claim: DoorRoute<DevicesContext> = {
    method: 'POST',
    path: CLAIM_PATH,
    auth: false,
    async handle(req, res, ctx) {
      if (ctx.admission.token === undefined) throw serverStopping();
      const claims = ctx.admission.claims;
      // Checked before the body is read: while guessing is paused nothing is tried at all.
      const paused = claims.pausedFor();
      if (paused !== undefined) throw tooManyAttempts(paused);
      const { json } = await readJsonBody(req, ctx);
      const body = asObject(json);
      const shape = '{"code":"…","name":"…","publicKey"?:{…},"proof"?:{…}}';
      if (typeof body?.code !== 'string' || body.code.length > 64) throw new HttpError(400, 'request.invalid_body', `The body must be ${shape}: "code" is the ${CODE_LENGTH}-character code the desktop shows.`);
      const fields = await registrationFields(body, shape);
      // The code first: without it a caller learns nothing of the desk's devices (whether a key
      // is registered). A refused proof leaves the code live for the real phone's next try.
      codeTaken(claims.check(body.code));
      await proveKey(body, fields, ctx, seen);
      codeTaken(claims.claim(body.code));
      await registerAndAnswer(res, ctx, fields);
    },
  };

  const newCode: DoorRoute<DevicesContext> = {
    method: 'POST',
    path: CODES_PATH,
    auth: authenticateDesk,
    handle(_req, res, ctx) {
      const issued = ctx.admission.claims.issue();
      sendJson(res, 201, { code: issued.code, expiresAt: new Date(issued.expiresAt).toISOString() });
    },
  };

  const agentAccess: DoorRoute<DevicesContext> = {
    method: 'PUT',
    path: DEVICE_AGENT_PATH,
    auth: authenticateDesk,
    async handle(req, res, ctx) {
      const { id, devices } = pathDevice(req, ctx, '', false);
      const body = asObject((await readJsonBody(req, ctx)).json);
      if (typeof body?.allowed !== 'boolean') throw new HttpError(400, 'request.invalid_body', 'The body must be {"allowed": true} or {"allowed": false}.');
      let changed;
      try {
        changed = await devices.setAgent(id, body.allowed);
      } catch (err) {
        ctx.options.logger.error(`devices: could not save the devices file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
        throw new HttpError(500, 'server.internal_error', 'The desktop could not save the device.');
      }
      if (!changed) throw deviceNotFound(id);
      sendJson(res, 200, deviceInfo(changed, ctx, undefined));
    },
  };

  const list: DoorRoute<DevicesContext> = {
    method: 'GET',
    path: DEVICES_PATH,
    auth: true,
    handle(req, res, ctx) {
      const now = Date.now();
      const current = ctx.state(req).device;
      sendJson(res, 200, registry(ctx).list().map((d) => deviceInfo(d, ctx, current, now)));
    },
  };

  const rename: DoorRoute<DevicesContext> = {
    method: 'PATCH',
    path: DEVICE_PATH,
    auth: true,
    async handle(req, res, ctx) {
      // A phone names itself (its Settings); it may not relabel another phone the desk would then misjudge.
      const { id, current, devices } = pathDevice(req, ctx, 'A device can rename only itself; rename other devices at the desktop.');
      const { json } = await readJsonBody(req, ctx);
      const name = cleanDeviceName(asObject(json)?.name);
      if (!name) throw new HttpError(400, 'request.invalid_body', `The body must be {"name":"…"}: ${NAME_SHAPE}.`);
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

  const revoke: DoorRoute<DevicesContext> = {
    method: 'DELETE',
    path: DEVICE_PATH,
    auth: true,
    async handle(req, res, ctx) {
      // A phone may unpair itself; removing others is for the desk (the pairing token) and for a
      // phone the desk trusts with the agent, so a lost phone can be cut off from the other.
      const { id, current, devices } = pathDevice(req, ctx, 'This phone can remove only itself: removing another device needs the pairing token or a phone the desk allowed to use the agent.', true);
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

  return { routes: [register, claim, newCode, list, rename, revoke, agentAccess] };
};
