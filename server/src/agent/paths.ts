import { posix } from 'node:path';
import { WorkspaceError } from './workspace';

/**
 * Files no tool may read or write, whatever the folder and in any case (`server.PEM`, `.ENV`):
 * secrets a model has no business seeing and a phone no business changing (environment files,
 * ssh keys of any name, TLS and Java keystores, registry, git and database credentials).
 */
const DENIED_NAME = /^(?:\.env(?:\..*)?|\.envrc|id_.*|\.git-credentials|\.pgpass|\.npmrc|\.netrc|.*\.(?:pem|key|p12|pfx|jks|keystore))$/i;
/**
 * Folders nothing under which is reachable, at any depth: git's database, whose hooks and config
 * would run code the user never approved, and the cloud, ssh and Kubernetes credential folders.
 */
const DENIED_DIR = /^\.(?:git|aws|ssh|kube)$/i;
/** Docker's credentials: a name denied in one folder only. */
const DOCKER_CONFIG = /(?:^|\/)\.docker\/config\.json$/i;

/**
 * The built-in list as globs (matched case-insensitively: ripgrep's `--iglob`, git's `icase`):
 * a fast path for a program that walks on its own; what it reports is checked with isDenied.
 */
export const DENIED_GLOBS: readonly string[] = [
  '.env', '.env.*', '.envrc', 'id_*', '.git-credentials', '.pgpass', '.npmrc', '.netrc',
  '*.pem', '*.key', '*.p12', '*.pfx', '*.jks', '*.keystore', '.git', '.aws', '.ssh', '.kube', '.docker/config.json',
];

/**
 * THE deny-list check every tool and host applies (list, search, read, write, diagnostics, the
 * `@` suggestions, git_diff's output): true when a relative path (`/`-separated) is on the
 * built-in list or matches one of `extra` (the folder's denyPaths and DeskRelay's own files,
 * from denyGlobs, case-insensitive). Case never matters: `.Git/config`, `server.PEM`, `.ENV`.
 */
export function isDenied(relative: string, extra: readonly RegExp[] = []): boolean {
  const segments = relative.split('/');
  for (let i = 0; i < segments.length - 1; i++) if (isDeniedDir(segments[i]!)) return true;
  return isDeniedFile(segments.at(-1) ?? '', relative, extra);
}

/** A folder a walk must not enter (isDenied's fast path: `.git`, `.ssh`… in any case). */
export function isDeniedDir(name: string): boolean {
  // Every denied folder's name starts with a dot: one character compare for most entries.
  return name.charCodeAt(0) === 46 && DENIED_DIR.test(name);
}

/**
 * isDenied for a file a walk found by its name in a folder it entered (so no denied folder on its
 * path, the walk never enters one): without splitting the path, which a walk of a large tree paid per file.
 */
export function isDeniedFile(name: string, relative: string, extra: readonly RegExp[] = []): boolean {
  if (DENIED_NAME.test(name) || isDeniedDir(name)) return true;
  if (name.length === 11 && DOCKER_CONFIG.test(relative)) return true;
  for (const re of extra) if (re.test(relative)) return true;
  return false;
}

/** Globs the desk denies (`deskrelay.agent.denyPaths`, config `agent.denyPaths`) as isDenied's `extra`: case-insensitive, blanks dropped. */
export function denyGlobs(globs: readonly string[]): RegExp[] {
  return globs.filter((g) => g.trim() !== '').map((g) => new RegExp(globToRegExp(g).source, 'i'));
}

/** An exact folder-relative path (a file or a folder and what is under it) as isDenied's `extra`, case-insensitive. */
export function denyExact(relative: string): RegExp {
  return new RegExp(`^${relative.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:/.*)?$`, 'i');
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
