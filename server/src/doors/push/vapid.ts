import { createECDH, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../logger';

/** The desktop's VAPID key pair (RFC 8292), base64url: the P-256 public point (65 bytes) and private scalar (32 bytes). */
export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

/** In the config dir beside the token, 0600. Only the public key ever leaves it. */
export const vapidPath = (dir: string) => join(dir, 'push-vapid.json');

/** The public key that goes with a private one, or undefined when the pair is not a valid P-256 pair. */
function checkPair(keys: unknown): VapidKeys | undefined {
  if (typeof keys !== 'object' || keys === null) return undefined;
  const { publicKey, privateKey } = keys as Record<string, unknown>;
  if (typeof publicKey !== 'string' || typeof privateKey !== 'string') return undefined;
  try {
    const priv = Buffer.from(privateKey, 'base64url');
    if (priv.length !== 32) return undefined;
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(priv);
    return ecdh.getPublicKey('base64url', 'uncompressed') === publicKey ? { publicKey, privateKey } : undefined;
  } catch {
    return undefined;
  }
}

function generate(): VapidKeys {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  // getPrivateKey drops leading zero bytes; VAPID wants the 32-byte scalar.
  const priv = Buffer.alloc(32);
  const raw = ecdh.getPrivateKey();
  raw.copy(priv, 32 - raw.length);
  return { publicKey: ecdh.getPublicKey('base64url', 'uncompressed'), privateKey: priv.toString('base64url') };
}

async function readKeys(path: string): Promise<{ keys?: VapidKeys; missing: boolean }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { missing: true };
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { missing: false };
  }
  return { keys: checkPair(parsed), missing: false };
}

/**
 * The key pair in the config dir, made on first use. Written like the token file: a private
 * temp file (0600, synced), then put in place atomically. A new file is linked into place, so
 * when two relays (the extension and the CLI) make one at once, the first wins and both use it;
 * a damaged file is replaced (phones then subscribe again). The keys are never logged.
 */
export async function loadVapidKeys(dir: string, logger: Logger): Promise<VapidKeys> {
  const path = vapidPath(dir);
  const found = await readKeys(path);
  if (found.keys) {
    // A file someone loosened is tightened again: it holds a private key.
    await chmod(path, 0o600);
    return found.keys;
  }
  const keys = generate();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.push-vapid.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(keys)}\n`, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    if (found.missing) {
      try {
        await link(temp, path);
        logger.info('push: made the desktop\'s Web Push key pair (VAPID)');
        return keys;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') {
          // Another relay made one first: use it.
          const theirs = await readKeys(path);
          if (theirs.keys) return theirs.keys;
        } else if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') {
          throw err;
        }
        // A file system without hard links: the rename below still puts it in place atomically.
      }
    }
    await rename(temp, path);
    if (found.missing) logger.info('push: made the desktop\'s Web Push key pair (VAPID)');
    else logger.warn('push: the Web Push key file was not a valid key pair; made a new one (phones subscribe again)');
    return keys;
  } finally {
    await rm(temp, { force: true });
  }
}
