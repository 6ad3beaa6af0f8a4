import { constants, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { WorkspaceError } from '../../workspace';

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
