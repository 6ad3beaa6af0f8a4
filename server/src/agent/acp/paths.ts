import { isAbsolute, relative, resolve, sep } from 'node:path';
import { RequestError } from '@agentclientprotocol/sdk';

/** A path relative to the folder that leads out of it (a file named `..x` inside is not). */
export const outside = (rel: string) => rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);

/** ACP's absolute paths against the session's folder (its worktree, for a worktree session). */
export class AcpPaths {
  constructor(readonly root: string) {}

  /** An ACP path (absolute) as a folder-relative one; outside the folder is refused. */
  rel(path: string): string {
    if (typeof path !== 'string' || !isAbsolute(path)) throw RequestError.invalidParams(undefined, `"path" must be an absolute path inside ${this.root}`);
    const rel = relative(this.root, path);
    if (rel === '' || outside(rel)) throw new RequestError(-32602, `${path} is outside the session's folder; DeskRelay reads and writes only inside ${this.root}.`);
    return rel.split('\\').join('/');
  }

  /** A path as cards show it: folder-relative when inside. */
  shown(path: string): string {
    const rel = relative(this.root, resolve(this.root, path));
    return outside(rel) ? path : rel.split('\\').join('/');
  }

  abs(path: string): string {
    return resolve(this.root, path);
  }
}

/** A word for /bin/sh: left as is when plain, else single-quoted. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
