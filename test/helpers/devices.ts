/**
 * Devices as tests use them: one function registers a device (with a WebCrypto P-256 key, as the
 * phone web client makes), one signs an approval decision the way docs/agent.md says, and a
 * held request tells when its stream opened and when it ended.
 */
import { webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request, type OutgoingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { bearer, send } from './http';

const { subtle } = webcrypto;

export interface DeviceKey {
  privateKey: webcrypto.CryptoKey;
  /** The public key as the phone sends it: `{"kty":"EC","crv":"P-256","x","y"}`. */
  jwk: { kty: 'EC'; crv: 'P-256'; x: string; y: string };
}

export async function newDeviceKey(): Promise<DeviceKey> {
  const pair = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const full = await subtle.exportKey('jwk', pair.publicKey);
  return { privateKey: pair.privateKey, jwk: { kty: 'EC', crv: 'P-256', x: full.x!, y: full.y! } };
}

export interface TestDevice {
  id: string;
  token: string;
  key: DeviceKey;
}

// The last issuedAt per key: two proofs by one key in the same millisecond would be one (refused as used).
const lastIssued = new WeakMap<DeviceKey, number>();

/**
 * Proof of holding the key (docs/devices.md): its signature over
 * `deskrelay-register:v1\n<x>\n<y>\n<name>\n<issuedAt>`, made now (or at `issuedAt`).
 */
export async function registrationProof(key: DeviceKey, name: string, issuedAt?: string): Promise<{ issuedAt: string; signature: string }> {
  let at = issuedAt;
  if (at === undefined) {
    const ms = Math.max(Date.now(), (lastIssued.get(key) ?? 0) + 1);
    lastIssued.set(key, ms);
    at = new Date(ms).toISOString();
  }
  const message = `deskrelay-register:v1\n${key.jwk.x}\n${key.jwk.y}\n${name}\n${at}`;
  const signature = await subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, new TextEncoder().encode(message));
  return { issuedAt: at, signature: Buffer.from(signature).toString('base64url') };
}

/** Registers a device with the pairing token and a fresh key, with its proof (`POST /v1/devices`); throws unless 201. */
export async function registerDevice(relay: { url: string; token: string }, name = 'iPhone Safari', key?: DeviceKey): Promise<TestDevice> {
  const deviceKey = key ?? (await newDeviceKey());
  const reply = await send(relay.url, '/v1/devices', {
    method: 'POST',
    headers: { ...bearer(relay.token), 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, publicKey: deviceKey.jwk, proof: await registrationProof(deviceKey, name) }),
  });
  if (reply.status !== 201) throw new Error(`registering a device answered ${reply.status}: ${reply.body}`);
  return { id: reply.json.id, token: reply.json.token, key: deviceKey };
}

/** A relay as a test reaches it: in this process (its RelayServer), or a CLI child (its config folder, where the desk token is). */
export type DeskOf = { url: string; token: string } & ({ relay: { allowAgent(id: string, allowed: boolean): Promise<boolean> } } | { configDir: string });

/** The desk allows (or denies) a device the agent: in-process, or as `deskrelay devices allow` does, with the desk token. */
export async function allowAgent(desk: DeskOf, id: string, allowed = true): Promise<void> {
  if ('relay' in desk) {
    if (!(await desk.relay.allowAgent(id, allowed))) throw new Error(`no device ${id}`);
    return;
  }
  const deskToken = readFileSync(join(desk.configDir, 'desk-token'), 'utf8').trim();
  const reply = await send(desk.url, `/v1/devices/${id}/agent`, { method: 'PUT', headers: { ...bearer(deskToken), 'Content-Type': 'application/json' }, body: JSON.stringify({ allowed }) });
  if (reply.status !== 200) throw new Error(`allowing ${id} answered ${reply.status}: ${reply.body}`);
}

/** What drives the agent now (issue 36): a device with a key, registered and allowed at the desk. */
export async function agentDevice(desk: DeskOf, name = 'Agent phone'): Promise<TestDevice> {
  const device = await registerDevice(desk, name);
  await allowAgent(desk, device.id);
  return device;
}

/** The exact string a decision's signature covers (docs/agent.md). */
export const approvalMessage = (sessionId: string, callId: string, decision: string, digest: string) => `deskrelay-approval:v1\n${sessionId}\n${callId}\n${decision}\n${digest}`;

/** base64url of the IEEE P1363 ECDSA P-256/SHA-256 signature, as WebCrypto gives it. */
export async function signApproval(key: DeviceKey, sessionId: string, callId: string, decision: string, digest: string): Promise<string> {
  const signature = await subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, new TextEncoder().encode(approvalMessage(sessionId, callId, decision, digest)));
  return Buffer.from(signature).toString('base64url');
}

/** A signed session action (docs/devices.md): `{signature, issuedAt}` over `deskrelay-<action>:v2\n<sessionId>\n<subject…>\n<issuedAt>`. */
export async function signAction(key: DeviceKey, action: string, sessionId: string, subject: string[] = [], issuedAt = new Date().toISOString()): Promise<{ signature: string; issuedAt: string }> {
  // Written out here rather than taken from protocol/agent.ts: the test pins the text a phone signs.
  const message = [`deskrelay-${action}:v2`, sessionId, ...subject, issuedAt].join('\n');
  return { signature: Buffer.from(await subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, new TextEncoder().encode(message))).toString('base64url'), issuedAt };
}

/** A session action as the allowed phone sends it (signed): `DELETE` the session, or POST `…/<action>` with `body`. */
export async function actAs(desk: { url: string; phone: { token: string; key: DeviceKey } }, id: string, action: 'delete' | 'discard' | 'merge' | 'mode' | 'model', body: Record<string, string> = {}) {
  const subject = action === 'mode' || action === 'model' ? [body[action] ?? ''] : [];
  const signed = await signAction(desk.phone.key, action, id, subject);
  return send(desk.url, action === 'delete' ? `/v1/agent/sessions/${id}` : `/v1/agent/sessions/${id}/${action}`, {
    method: action === 'delete' ? 'DELETE' : 'POST',
    headers: { ...bearer(desk.phone.token), 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, ...signed }),
  });
}

/**
 * A phone's decision as the web client sends it: the call's digest from the session's snapshot,
 * signed with the device's key. `sign` overrides what is signed (tests of refusals).
 */
export async function decideAs(
  relay: { url: string },
  device: { token: string; key: DeviceKey },
  sessionId: string,
  callId: string,
  decision: string,
  sign: Partial<{ sessionId: string; callId: string; decision: string; digest: string; key: DeviceKey }> = {},
  extra: Record<string, unknown> = {},
) {
  const snapshot = await send(relay.url, `/v1/agent/sessions/${sessionId}`, { headers: bearer(device.token) });
  const digest = (snapshot.json?.pending as { callId: string; digest: string }[] | undefined)?.find((p) => p.callId === callId)?.digest ?? '';
  const signature = await signApproval(sign.key ?? device.key, sign.sessionId ?? sessionId, sign.callId ?? callId, sign.decision ?? decision, sign.digest ?? digest);
  return send(relay.url, `/v1/agent/sessions/${sessionId}/approvals/${callId}`, {
    method: 'POST',
    headers: { ...bearer(device.token), 'Content-Type': 'application/json' },
    body: JSON.stringify({ decision, signature, ...extra }),
  });
}

/** A request held open: `opened` once its head arrived (with the status), `ended` once its body ended or it was cut. */
export interface Held {
  opened: Promise<number>;
  ended: Promise<string>;
  body(): string;
  close(): void;
}

export function hold(baseUrl: string, path: string, options: { method?: string; headers?: OutgoingHttpHeaders; body?: string } = {}): Held {
  const url = new URL(baseUrl);
  let text = '';
  let open: (status: number) => void = () => {};
  let end: (body: string) => void = () => {};
  const opened = new Promise<number>((r) => (open = r));
  const ended = new Promise<string>((r) => (end = r));
  const req = request({ host: url.hostname, port: url.port, path, method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
    open(res.statusCode ?? 0);
    res.setEncoding('utf8');
    res.on('data', (d: string) => (text += d));
    res.on('end', () => end(text));
    res.on('close', () => end(text));
    res.on('error', () => end(text));
  });
  req.on('error', () => {
    open(0);
    end(text);
  });
  if (options.body !== undefined) req.setHeader('Content-Length', Buffer.byteLength(options.body));
  req.end(options.body);
  return { opened, ended, body: () => text, close: () => req.destroy() };
}

/** Whether `promise` settles within `ms` (a test's upper bound, never a timing assertion beyond it). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([promise.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return settled;
}
