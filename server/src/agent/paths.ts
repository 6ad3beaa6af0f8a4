/**
 * What the agent may open, in one place: which paths (inside the folder, not on the deny-list)
 * and how it opens them (never through a link, never blocking, only regular files with one name),
 * so a check added to one side is seen next to the other.
 */
import { constants, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
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

// Absent on Windows (0 there: no FIFOs to block on, and links are checked by the caller's realpath).
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

/**
 * Every open the agent makes is non-blocking, so a FIFO, socket or device in the folder can never
 * hold one of libuv's four pool threads waiting for a writer (issue 35: five reads of a FIFO hung
 * the relay's file I/O), and never follows a link at its last component, so a link put in the
 * file's place after the path was checked is refused, not followed.
 */
export const READ_FLAGS = constants.O_RDONLY | NONBLOCK | NOFOLLOW;
/** No O_TRUNC: the file is truncated only once fstat said it is one the agent may write. */
export const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | NONBLOCK | NOFOLLOW;

export const notRegular = (path: string) =>
  new WorkspaceError(`Refused: "${path}" is not a regular file (a pipe, socket or device); the agent reads and writes only regular files.`);
export const linkRefused = (path: string) =>
  new WorkspaceError(`Refused: "${path}" is a symbolic link; the agent never writes through a link (write the file it points to by its own path).`);
const hardLink = (path: string) =>
  new WorkspaceError(`Refused: "${path}" has more than one name (a hard link), so it may be a secret or a file outside the folder under another name; the agent neither reads nor writes it.`);

/**
 * Why the agent may not read or write what `info` describes (`path` as the model named it); none
 * for a regular file with one name. A folder is the caller's to word.
 */
export function checkRegular(info: Stats, path: string): void {
  if (!info.isFile()) throw notRegular(path);
  // A second name may be anything on the same disk: `.env`, `~/.bashrc`.
  if (info.nlink > 1) throw hardLink(path);
}

/**
 * Opens `abs` (a checked real path) with `flags` and fstats what was opened: undefined when
 * nothing is there, a WorkspaceError when it is a link now, not a regular file or a hard link.
 * Folders come back as they are (the caller says what to do with one).
 */
export async function openChecked(abs: string, path: string, flags: number, mode?: number): Promise<{ handle: FileHandle; info: Stats } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(abs, flags, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw linkRefused(path);
    // A socket (ENXIO), or a FIFO opened for writing with no reader (ENXIO).
    if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP') throw notRegular(path);
    if (code === 'EISDIR') throw new WorkspaceError(`"${path}" is a folder.`);
    throw new WorkspaceError(`Cannot open "${path}" (${code ?? 'error'}).`);
  }
  try {
    const info = await handle.stat();
    if (!info.isDirectory()) checkRegular(info, path);
    return { handle, info };
  } catch (err) {
    await handle.close().catch(() => {});
    throw err;
  }
}

/** Up to `size` bytes of an open regular file from its start (fewer when it shrank meanwhile). */
export async function readUpTo(handle: FileHandle, size: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(size);
  let got = 0;
  while (got < size) {
    const { bytesRead } = await handle.read(buf, got, size - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/** A small regular file's bytes (a .gitignore), or undefined when it is missing, not a regular file, or larger than `max`: never blocks on a FIFO. */
export async function readSmallFile(abs: string, max: number): Promise<Buffer | undefined> {
  let opened;
  try {
    opened = await open(abs, constants.O_RDONLY | NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const info = await opened.stat();
    if (!info.isFile() || info.size > max) return undefined;
    return await readUpTo(opened, info.size);
  } catch {
    return undefined;
  } finally {
    await opened.close().catch(() => {});
  }
}
