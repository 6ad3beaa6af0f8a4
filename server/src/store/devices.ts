import { createHash, hash, randomBytes } from 'node:crypto';
import { readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger';
import { newDeviceToken, sameKey, storedKey, type DevicePublicKey } from './deviceKeys';
import { writePrivateFile } from './file';

export { cleanPublicKey, importPublicKey, newDeviceToken, verifySigned, type DevicePublicKey } from './deviceKeys';

/** Devices kept at most: a person's phones and tablets, not a user base. */
export const MAX_DEVICES = 200;
/** A device that made a request this recently counts as connected, even with no stream open. */
export const CONNECTED_WINDOW_MS = 2 * 60_000;
/** Names are shown in a quick pick and a notification: short, one line. */
export const MAX_NAME_LENGTH = 64;

export const devicesPath = (dir: string) => join(dir, 'devices.json');

/** Revoked token digests kept at most (oldest dropped): enough to tell a removed phone it was removed. */
export const MAX_REVOKED = 1000;

/**
 * Whether the desk let this device use the agent: `allowed` / `denied` at the desk (remembered
 * with the device), `asked` while a request waits for the desk's answer, undefined before it asked.
 */
export type AgentAccess = 'allowed' | 'denied' | 'asked' | undefined;

/** What the desk shows of a device; never its token or hash. */
export interface DeviceSummary {
  id: string;
  name: string;
  createdAt: number;
  lastSeen: number;
  /** Its public key (what approvals are verified with); absent for a client that sent none. */
  publicKey?: DevicePublicKey;
  agent: AgentAccess;
}

interface DeviceRecord extends DeviceSummary {
  /** SHA-256 of the registry's salt and the token. */
  digest: Buffer;
}

/** UTF-16 code units of a token hashed without a new buffer (3 bytes of UTF-8 each at most); longer ones take the slow path. */
const SCRATCH_CHARS = 128;

export type DeviceChange =
  | { type: 'registered'; device: DeviceSummary }
  /** A registration or claim with a public key already registered: the same device got a new token; the old one stopped. */
  | { type: 'replaced'; device: DeviceSummary }
  | { type: 'renamed'; device: DeviceSummary }
  | { type: 'revoked'; device: DeviceSummary }
  /** The desk allowed or denied the agent to it (`device.agent` says which). */
  | { type: 'agent'; device: DeviceSummary }
  /** The device asked for the agent for the first time; the desk should answer (folders: where). */
  | { type: 'agent-requested'; device: DeviceSummary; folders: string[] }
  | { type: 'forgotten'; count: number };

/** The stored form: salted hashes and public keys only, never a token. */
interface DevicesFile {
  version: 1;
  salt: string;
  devices: { id: string; name: string; createdAt: string; lastSeen: string; hash: string; publicKey?: DevicePublicKey; agent?: 'allowed' | 'denied' }[];
  /** Digests of revoked devices' tokens: such a token is told it was removed, not that it is unknown. */
  revoked?: string[];
}

/** Short enough to type in `deskrelay devices revoke <id>`; random, so it says nothing about the token. */
function newDeviceId(): string {
  return `dev_${randomBytes(5).toString('hex')}`;
}

/** A device name as given, trimmed; undefined when it is empty, too long or holds control characters. */
export function cleanDeviceName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.trim();
  if (name === '' || name.length > MAX_NAME_LENGTH || /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(name)) return undefined;
  return name;
}

/**
 * The devices paired with this desk (issue 26). A presented token is hashed once, SHA-256 of a
 * per-registry random salt and the token, then compared in constant time with every stored
 * digest (matchDigest): the cost grows with the number of devices, never with which one
 * matched. A per-device salt would need one hash per device per request; the tokens are 256
 * random bits (no dictionary to precompute), so the salt only keeps a stolen file's hashes from
 * being compared with anything computed elsewhere, and a plain salted SHA-256 (not HMAC, not a
 * slow KDF) is enough: it is cheap on every request.
 *
 * With a file (the user's "remember devices"), every change is written to it atomically (0600),
 * holding the salt and the digests only; without one, the devices die with the relay.
 */
export class DeviceRegistry {
  private readonly devices = new Map<string, DeviceRecord>();
  /** Every device's digest end to end, in `order`: what matchDigest walks. Rebuilt on each change. */
  private order: DeviceRecord[] = [];
  private digests = new Uint32Array(0);
  /** Revoked tokens' digests, oldest first, end to end as `digests` is. */
  private revoked: Buffer[] = [];
  private revokedWords = new Uint32Array(0);
  private readonly listeners = new Set<(change: DeviceChange) => void>();
  private writing: Promise<void> = Promise.resolve();
  /** The salt followed by room for the token being hashed: one hash call per request, no concatenation. */
  private readonly scratch: Buffer;
  /** The presented token's words, reused: matchDigest reads them before the next request can. */
  private readonly needle = new Uint32Array(WORDS);

  private constructor(
    private readonly salt: Buffer,
    private readonly file: string | undefined,
    private readonly logger: Logger,
  ) {
    this.scratch = Buffer.alloc(salt.length + SCRATCH_CHARS * 3);
    salt.copy(this.scratch);
  }

  /** In memory only: the devices die with it. */
  static ephemeral(logger: Logger): DeviceRegistry {
    return new DeviceRegistry(randomBytes(32), undefined, logger);
  }

  /**
   * The devices remembered in `file` (none when it does not exist). A file that cannot be read
   * as ours is moved aside (`devices.json.unreadable`) and the desk starts with no devices.
   */
  static async remembered(file: string, logger: Logger): Promise<DeviceRegistry> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new DeviceRegistry(randomBytes(32), file, logger);
      throw err;
    }
    const parsed = parseDevicesFile(text);
    if (!parsed) {
      logger.warn(`devices: ${file} is not a DeskRelay devices file; moved aside to devices.json.unreadable, every phone pairs again`);
      await rename(file, `${file}.unreadable`).catch(() => rm(file, { force: true }));
      return new DeviceRegistry(randomBytes(32), file, logger);
    }
    const registry = new DeviceRegistry(parsed.salt, file, logger);
    for (const d of parsed.devices) registry.devices.set(d.id, d);
    registry.revoked = parsed.revoked;
    registry.reindex();
    return registry;
  }

  get size(): number {
    return this.devices.size;
  }

  /** Whether this registry keeps its devices in a file across restarts. */
  get remembers(): boolean {
    return this.file !== undefined;
  }

  onChange(listener: (change: DeviceChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The id of the device holding `token`, or undefined. Costs the same for a match, a miss and a malformed token. */
  match(token: string): string | undefined {
    return this.holderOf(this.digest(token));
  }

  /**
   * The id of the device whose digest (digest()) this is, or undefined, compared in constant
   * time with every device. Admission hashes the presented token once and compares that one
   * digest with the pairing token's and here (http/admission.ts).
   */
  holderOf(digest: Buffer): string | undefined {
    const at = matchDigest(wordsInto(digest, this.needle, 0), this.digests, this.order.length);
    const found = at < 0 ? undefined : this.order[at];
    if (found) found.lastSeen = Date.now();
    return found?.id;
  }

  /** Whether this digest is a revoked device's token (compared in constant time with every one kept). */
  wasRevoked(digest: Buffer): boolean {
    return matchDigest(wordsInto(digest, this.needle, 0), this.revokedWords, this.revoked.length) >= 0;
  }

  /** SHA-256 of this registry's salt and `token`: what is stored per device and compared per request. */
  digest(token: string): Buffer {
    const start = this.salt.length;
    if (token.length > SCRATCH_CHARS) return createHash('sha256').update(this.salt).update(token, 'utf8').digest();
    const end = start + this.scratch.write(token, start, 'utf8');
    const digest = hash('sha256', this.scratch.subarray(0, end), 'buffer');
    // The token does not stay in the scratch buffer.
    this.scratch.fill(0, start, end);
    return digest;
  }

  /** The device registered with this public key, if any: one key is one device. */
  withKey(publicKey: DevicePublicKey): DeviceSummary | undefined {
    const found = [...this.devices.values()].find((d) => sameKey(d.publicKey, publicKey));
    return found && summary(found);
  }

  /**
   * A new device and its token (the only time the token exists outside the phone). With a
   * public key already registered, that device gets the new token instead (same id, name and
   * agent access) and its old token stops at once (`replaced`): a phone pairing again stays one
   * device.
   */
  async register(name: string, publicKey?: DevicePublicKey): Promise<{ device: DeviceSummary; token: string; replaced: boolean }> {
    const token = newDeviceToken();
    const existing = publicKey && [...this.devices.values()].find((d) => sameKey(d.publicKey, publicKey));
    if (existing) {
      const before = existing.digest;
      existing.digest = this.digest(token);
      existing.lastSeen = Date.now();
      this.reindex();
      try {
        await this.save();
      } catch (err) {
        if (this.devices.get(existing.id) === existing) existing.digest = before;
        this.reindex();
        throw err;
      }
      const device = summary(existing);
      this.emit({ type: 'replaced', device });
      return { device, token, replaced: true };
    }
    if (this.devices.size >= MAX_DEVICES) throw new RangeError(`at most ${MAX_DEVICES} devices`);
    const now = Date.now();
    let id = newDeviceId();
    while (this.devices.has(id)) id = newDeviceId();
    const record: DeviceRecord = { id, name, createdAt: now, lastSeen: now, digest: this.digest(token), agent: undefined, ...(publicKey ? { publicKey } : {}) };
    this.devices.set(id, record);
    this.reindex();
    try {
      await this.save();
    } catch (err) {
      // Not remembered: not registered either, so the phone is not told it is paired for good.
      this.devices.delete(id);
      this.reindex();
      throw err;
    }
    const device = summary(record);
    this.emit({ type: 'registered', device });
    return { device, token, replaced: false };
  }

  /** The desk's answer: the device may (or may not) use the agent; remembered with it. Undefined when there is no such device. */
  async setAgent(id: string, allowed: boolean): Promise<DeviceSummary | undefined> {
    const record = this.devices.get(id);
    if (!record) return undefined;
    record.agent = allowed ? 'allowed' : 'denied';
    const device = summary(record);
    this.emit({ type: 'agent', device });
    await this.save();
    return device;
  }

  /**
   * A device asks for the agent without the desk's leave: the first time (not yet asked, not
   * denied), the desk is told (`agent-requested`). True when this was the first time.
   */
  askAgent(id: string, folders: string[]): boolean {
    const record = this.devices.get(id);
    if (!record || record.agent !== undefined) return false;
    record.agent = 'asked';
    this.emit({ type: 'agent-requested', device: summary(record), folders });
    return true;
  }

  /** Gives a device a new name (the phone's Settings); undefined when there is no such device. */
  async rename(id: string, name: string): Promise<DeviceSummary | undefined> {
    const record = this.devices.get(id);
    if (!record) return undefined;
    const before = record.name;
    record.name = name;
    try {
      await this.save();
    } catch (err) {
      // Not remembered: not renamed either, so the desk and the file agree.
      if (this.devices.get(id) === record) record.name = before;
      throw err;
    }
    const device = summary(record);
    this.emit({ type: 'renamed', device });
    return device;
  }

  /** Removes a device; its token stops matching at once. False when there is no such device. */
  async revoke(id: string): Promise<DeviceSummary | undefined> {
    const record = this.devices.get(id);
    if (!record) return undefined;
    this.devices.delete(id);
    this.remember(record.digest);
    this.reindex();
    const device = summary(record);
    this.emit({ type: 'revoked', device });
    await this.save();
    return device;
  }

  /** Removes every device; returns how many there were. */
  async forgetAll(): Promise<number> {
    const count = this.devices.size;
    const gone = [...this.devices.values()].map(summary);
    for (const record of this.devices.values()) this.remember(record.digest);
    this.devices.clear();
    this.reindex();
    for (const device of gone) this.emit({ type: 'revoked', device });
    this.emit({ type: 'forgotten', count });
    await this.save();
    return count;
  }

  list(): DeviceSummary[] {
    return [...this.devices.values()].map(summary).sort((a, b) => a.createdAt - b.createdAt);
  }

  get(id: string): DeviceSummary | undefined {
    const record = this.devices.get(id);
    return record && summary(record);
  }

  /** Writes the file once more (last-seen times); the relay calls it when it stops. */
  flush(): Promise<void> {
    return this.save();
  }

  /** Keeps a revoked token's digest, so that token is told it was removed (the oldest are let go past MAX_REVOKED). */
  private remember(digest: Buffer): void {
    this.revoked.push(digest);
    if (this.revoked.length > MAX_REVOKED) this.revoked.splice(0, this.revoked.length - MAX_REVOKED);
  }

  private reindex(): void {
    this.revokedWords = new Uint32Array(this.revoked.length * WORDS);
    this.revoked.forEach((digest, i) => wordsInto(digest, this.revokedWords, i * WORDS));
    this.order = [...this.devices.values()];
    this.digests = new Uint32Array(this.order.length * WORDS);
    this.order.forEach((record, i) => wordsInto(record.digest, this.digests, i * WORDS));
  }

  private emit(change: DeviceChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (err) {
        this.logger.error(`devices: a listener failed (${err instanceof Error ? err.name : typeof err})`);
      }
    }
  }

  /** One write at a time, each with the state at its turn, so the last write holds the last state. */
  private save(): Promise<void> {
    const file = this.file;
    if (!file) return Promise.resolve();
    const run = this.writing.then(() => writePrivateFile(file, `${JSON.stringify(this.serialize(), null, 2)}\n`));
    this.writing = run.catch(() => undefined);
    return run;
  }

  private serialize(): DevicesFile {
    return {
      version: 1,
      salt: this.salt.toString('base64url'),
      devices: [...this.devices.values()].map((d) => ({
        id: d.id,
        name: d.name,
        createdAt: new Date(d.createdAt).toISOString(),
        lastSeen: new Date(d.lastSeen).toISOString(),
        hash: d.digest.toString('base64url'),
        ...(d.publicKey ? { publicKey: d.publicKey } : {}),
        ...(d.agent === 'allowed' || d.agent === 'denied' ? { agent: d.agent } : {}),
      })),
      revoked: this.revoked.map((digest) => digest.toString('base64url')),
    };
  }
}

function summary({ id, name, createdAt, lastSeen, publicKey, agent }: DeviceRecord): DeviceSummary {
  return { id, name, createdAt, lastSeen, agent, ...(publicKey ? { publicKey } : {}) };
}

function parseDevicesFile(text: string): { salt: Buffer; devices: DeviceRecord[]; revoked: Buffer[] } | undefined {
  let json: Partial<DevicesFile>;
  try {
    json = JSON.parse(text) as Partial<DevicesFile>;
  } catch {
    return undefined;
  }
  if (json?.version !== 1 || typeof json.salt !== 'string' || !Array.isArray(json.devices)) return undefined;
  const salt = Buffer.from(json.salt, 'base64url');
  if (salt.length < 16) return undefined;
  const devices: DeviceRecord[] = [];
  for (const d of json.devices) {
    const name = cleanDeviceName(d?.name);
    const digest = typeof d?.hash === 'string' ? Buffer.from(d.hash, 'base64url') : Buffer.alloc(0);
    const createdAt = Date.parse(d?.createdAt);
    const lastSeen = Date.parse(d?.lastSeen);
    const publicKey = storedKey(d?.publicKey);
    const agent = d?.agent === 'allowed' || d?.agent === 'denied' ? d.agent : undefined;
    if (typeof d?.id !== 'string' || !/^dev_[0-9a-f]{10}$/.test(d.id) || !name || digest.length !== 32 || Number.isNaN(createdAt) || Number.isNaN(lastSeen) || publicKey === false) return undefined;
    devices.push({ id: d.id, name, createdAt, lastSeen, digest, agent, ...(publicKey ? { publicKey } : {}) });
  }
  const revoked: Buffer[] = [];
  for (const r of Array.isArray(json.revoked) ? json.revoked : []) {
    const digest = typeof r === 'string' ? Buffer.from(r, 'base64url') : Buffer.alloc(0);
    if (digest.length !== 32) return undefined;
    revoked.push(digest);
  }
  return { salt, devices, revoked: revoked.slice(-MAX_REVOKED) };
}

/** Deletes the remembered devices of a desk whose relay is not running (CLI, extension). */
export async function forgetRememberedDevices(file: string): Promise<void> {
  await rm(file, { force: true });
}

// The token index every request walks (holderOf): kept beside the registry that builds it.

/** 32-bit words per digest. */
export const WORDS = 8;
/** Copies a digest's words into `into` at word `at` (no new ArrayBuffer per request: the slice was a visible share of accepting a stream). */
export function wordsInto(digest: Buffer, into: Uint32Array, at: number): Uint32Array {
  for (let w = 0; w < WORDS; w++) into[at + w] = digest.readUInt32LE(w * 4);
  return into;
}

/**
 * Which of `count` digests (laid end to end in `digests`, WORDS words each) equals `needle`, or
 * -1. Every word of every digest is XORed and OR-ed in, and the answer is picked without a
 * branch on the data, so the time depends on `count` alone: never on which digest matched, if
 * any, or on how many leading words did (the compare tweetnacl's `verify` does, over all
 * devices). One native timingSafeEqual per device cost ~0.2 µs in call overhead alone.
 */
export function matchDigest(needle: Uint32Array, digests: ArrayLike<number>, count: number): number {
  let found = -1;
  for (let d = 0; d < count; d++) {
    let diff = 0;
    for (let w = 0; w < WORDS; w++) diff |= digests[d * WORDS + w]! ^ needle[w]!;
    // found stays the first match: (diff === 0) & (found < 0) as a mask, not a branch.
    const take = -((diff === 0 ? 1 : 0) & (found < 0 ? 1 : 0));
    found = (d & take) | (found & ~take);
  }
  return found;
}
