import { posix } from 'node:path';
import { WorkspaceError } from './workspace';

/**
 * Files no tool may read or write, whatever the folder: secrets a model has no business seeing
 * and a phone no business changing (keys, tokens, registry credentials), and git's own database,
 * whose hooks and config would run code the user never approved.
 */
const DENIED_NAMES: readonly RegExp[] = [/^\.env$/, /^\.env\..*/, /\.pem$/i, /\.key$/i, /^id_rsa/, /^id_ed25519/, /^\.npmrc$/, /^\.netrc$/];

/** True when a relative path (`/`-separated) is on the built-in deny list or matches one of `extra` (globs). */
export function isDenied(relative: string, extra: readonly RegExp[] = []): boolean {
  const segments = relative.split('/');
  if (segments.includes('.git')) return true;
  return isDeniedFile(segments.at(-1) ?? '', relative, extra);
}

/**
 * isDenied for a file a walk found by its name in a folder it entered (so no `.git` on its path,
 * the walk never enters one): without splitting the path, which a walk of a large tree paid per file.
 */
export function isDeniedFile(name: string, relative: string, extra: readonly RegExp[] = []): boolean {
  for (const re of DENIED_NAMES) if (re.test(name)) return true;
  for (const re of extra) if (re.test(relative)) return true;
  return false;
}

/**
 * A glob as a RegExp over `/`-separated relative paths: `*` within a segment, `**` across
 * segments, `?` one character. A pattern without `/` matches a name at any depth (like
 * .gitignore); a folder's pattern covers everything under it.
 */
export function globToRegExp(glob: string): RegExp {
  let pattern = glob.trim().replace(/\\/g, '/');
  const anchored = pattern.includes('/') && !pattern.startsWith('**/');
  pattern = pattern.replace(/^\/+/, '').replace(/\/+$/, '');
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      i++;
      if (pattern[i + 1] === '/') {
        i++;
        source += '(?:.*/)?';
      } else source += '.*';
    } else if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else source += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`${anchored ? '^' : '(?:^|/)'}${source}(?:/.*)?$`);
}

/**
 * The folder-relative form of what the model named: `/` separators, no `.` segments. Absolute
 * paths and anything climbing out with `..` are refused; so is every denied file.
 */
export function relativeInside(input: unknown, extra: readonly RegExp[], what = 'path'): string {
  if (input === undefined || input === null || input === '') return '';
  if (typeof input !== 'string') throw new WorkspaceError(`${what} must be a string (a path relative to the folder).`);
  if (input.includes('\0')) throw new WorkspaceError(`${what} must not contain a NUL character.`);
  const slashed = input.replace(/\\/g, '/');
  if (slashed.startsWith('/') || /^[A-Za-z]:/.test(slashed) || slashed.startsWith('~')) {
    throw new WorkspaceError(`Refused: "${input}" is not a path relative to the folder; the agent works only inside it.`);
  }
  const normal = posix.normalize(slashed).replace(/\/+$/, '');
  if (normal === '..' || normal.startsWith('../')) throw new WorkspaceError(`Refused: "${input}" is outside the folder; the agent works only inside it.`);
  const relative = normal === '.' ? '' : normal;
  if (relative !== '' && isDenied(relative, extra)) throw deniedError(input);
  return relative;
}

export const deniedError = (input: string) =>
  new WorkspaceError(`Refused: "${input}" is a protected file (secrets, keys, credentials, git internals or a path the desk denied); the agent can neither read nor write it.`);
