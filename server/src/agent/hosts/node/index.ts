import { realpathSync } from 'node:fs';
import { lstat, mkdir, readlink, realpath, stat, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve as resolvePath, sep } from 'node:path';
import { commandEnv } from '../../commandEnv';
import { checkRegular, deniedError, denyExact, denyGlobs, globToRegExp, isDenied, linkRefused, notRegular, openChecked, readUpTo, READ_FLAGS, relativeInside, WRITE_FLAGS } from '../../paths';
import {
  WorkspaceError,
  type CommandOptions,
  type CommandResult,
  type DiagnosticsResult,
  type ListOptions,
  type ListResult,
  type SearchOptions,
  type SearchResult,
  type Workspace,
} from '../../workspace';
import { runShellCommand } from './command';
import { filterDiff } from './diffSections';
import { runSafeGit } from './git';
import { ripgrepSearch } from './ripgrep';
import { searchFiles } from './searchWorker';
import { ignoredAbove, walkFiles } from './walk';

export interface NodeWorkspaceOptions {
  /** The folder (absolute). */
  folder: string;
  /** Its name in the folder list (default: its base name). */
  name?: string;
  /** Extra globs no tool may read or write (`deskrelay.agent.denyPaths`, config `agent.denyPaths`). */
  denyPaths?: readonly string[];
  /** DeskRelay's own config dir: never reachable, even when the folder contains it. */
  configDir: string;
  /** Other files or folders of DeskRelay's never reachable (a `--config` file kept elsewhere). */
  protect?: readonly string[];
  /** The environment commands start from (default process.env), before commandEnv strips it. */
  env?: NodeJS.ProcessEnv;
  /** Names of variables holding provider keys (the config's apiKeyEnv): never passed to commands. */
  keyNames?: () => readonly string[];
  /** Names commands keep anyway and names they lose besides (config `agent.env`, settings `deskrelay.agent.env.*`), asked per command. */
  envRules?: () => { pass?: readonly string[]; drop?: readonly string[] };
  /**
   * The folder is a session's git worktree in DeskRelay's config folder (`<configDir>/worktrees/`):
   * the config folder contains it, so it is not refused whole; its other files lie outside the
   * folder, where nothing reaches.
   */
  worktree?: boolean;
  /** A ripgrep binary to search with (VS Code's own, or `rg` on PATH); without it, the plain JS search. */
  ripgrep?: () => string | undefined;
}

/** Files larger than this are not read whole or searched: the agent is for source, not data. */
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
const MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024;

const inside = (root: string, real: string) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);

/** `~`-shortened, as the desk shows a path. */
export function shortPath(path: string, home = homedir()): string {
  return home && inside(home, path) ? `~${path.slice(home.length).replace(/\\/g, '/')}` : path;
}

/** The CLI's Workspace: node fs in one folder, `git` when present, ripgrep when given one else a plain search on a thread of its own, commands in their own process group. */
export class NodeWorkspace implements Workspace {
  readonly name: string;
  readonly displayPath: string;
  /** The desk's denyPaths and DeskRelay's own files inside the folder: isDenied's `extra` for this folder. */
  private readonly deny: RegExp[];
  /** DeskRelay's own files inside the folder alone, to say so when the model names one. */
  private readonly own: RegExp[];
  private rootReal: Promise<string>;

  get absolutePath(): string {
    return this.options.folder;
  }

  constructor(private readonly options: NodeWorkspaceOptions) {
    this.name = options.name ?? (basename(options.folder) || options.folder);
    this.displayPath = shortPath(options.folder);
    this.own = ownInside(options.folder, this.protectList()).map(denyExact);
    this.deny = [...denyGlobs(options.denyPaths ?? []), ...this.own];
    this.rootReal = realpath(options.folder);
    this.rootReal.catch(() => {});
  }

  /**
   * THE deny-list check for this folder (paths.ts's isDenied with the desk's denyPaths and
   * DeskRelay's own files inside the folder): what a tool's output naming files (git_diff) is filtered by.
   */
  denied(relativePath: string): boolean {
    return isDenied(relativePath, this.deny);
  }

  /**
   * The real path of a folder-relative path, checked: inside the folder once symbolic links
   * are resolved (for a file not there yet, its nearest existing folder is), not denied under
   * its real name either, and never in DeskRelay's config dir.
   */
  async resolve(input: unknown, what = 'path'): Promise<{ rel: string; abs: string }> {
    const rel = relativeInside(input, [], what);
    if (this.own.some((re) => re.test(rel))) throw ownConfig(String(input));
    if (rel !== '' && isDenied(rel, this.deny)) throw deniedError(String(input));
    const root = await this.root();
    let probe = join(root, rel);
    let rest = '';
    let real: string | undefined;
    while (real === undefined) {
      try {
        real = await realpath(probe);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ELOOP') throw new WorkspaceError(`Refused: "${String(input)}" goes through a loop of symbolic links.`);
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new WorkspaceError(`Cannot reach "${String(input)}" (${code ?? 'error'}).`);
        // Something is there that realpath cannot follow: a link to nothing (a dangling link,
        // which a write would follow to create its target, outside the folder or in .git/hooks).
        if (code === 'ENOENT' && (await lstat(probe).then((i) => i.isSymbolicLink(), () => false))) {
          throw new WorkspaceError(`Refused: "${String(input)}" goes through a symbolic link to something that is not there (${await linkTarget(root, probe)}); the agent neither reads nor writes through it.`);
        }
        const up = dirname(probe);
        if (up === probe) throw new WorkspaceError(`Cannot reach "${String(input)}".`);
        rest = rest === '' ? basename(probe) : join(basename(probe), rest);
        probe = up;
      }
    }
    const abs = rest === '' ? real : join(real, rest);
    if (!inside(root, abs)) throw leadsOutside(String(input));
    const realRel = relative(root, abs).split(sep).join('/');
    if (realRel !== '' && isDenied(realRel, this.deny)) throw deniedError(String(input));
    for (const real of await this.protectedPaths()) {
      if (inside(real, abs)) throw ownConfig(String(input));
    }
    return { rel, abs };
  }

  /** DeskRelay's own files, resolved: never reachable, never listed, never searched. */
  private async protectedPaths(): Promise<string[]> {
    return Promise.all(this.protectList().map((own) => realpath(own).catch(() => own)));
  }

  private protectList(): string[] {
    return [...(this.options.worktree ? [] : [this.options.configDir]), ...(this.options.protect ?? [])];
  }

  /** The same workspace's rules (deny list, protected files, environment, search) in a session's git worktree of this folder. */
  worktree(folder: string): NodeWorkspace {
    return new NodeWorkspace({ ...this.options, folder, name: this.name, worktree: true });
  }

  private async root(): Promise<string> {
    try {
      return await this.rootReal;
    } catch {
      this.rootReal = realpath(this.options.folder);
      this.rootReal.catch(() => {});
      throw new WorkspaceError(`The folder ${this.displayPath} is not there any more.`);
    }
  }

  async listFiles(options: ListOptions): Promise<ListResult> {
    const { rel } = await this.resolve(options.path);
    const root = await this.root();
    const match = options.pattern ? globToRegExp(options.pattern) : undefined;
    const files: string[] = [];
    for await (const file of walkFiles({ root, under: rel, deny: this.deny, protect: await this.protectedPaths() })) {
      if (match && !match.test(file)) continue;
      if (files.length >= options.maxEntries) return { files, truncated: true };
      files.push(file);
    }
    return { files, truncated: false };
  }

  async readFile(path: string): Promise<string> {
    const text = await this.readIfExists(path);
    if (text === undefined) throw new WorkspaceError(`No file "${path}" in the folder.`);
    return text;
  }

  async readIfExists(path: string): Promise<string | undefined> {
    const { abs } = await this.resolve(path);
    // Opened first and the opened file checked (fstat): non-blocking, so a FIFO is refused, not waited on.
    const opened = await openChecked(abs, path, READ_FLAGS);
    if (!opened) return undefined;
    const { handle, info } = opened;
    try {
      if (info.isDirectory()) throw new WorkspaceError(`"${path}" is a folder; list_files shows what is in it.`);
      if (info.size > MAX_FILE_BYTES) throw new WorkspaceError(`"${path}" is ${info.size} bytes; the agent reads files up to ${MAX_FILE_BYTES} bytes.`);
      const bytes = await readUpTo(handle, info.size);
      if (bytes.subarray(0, 8192).includes(0)) throw new WorkspaceError(`"${path}" is a binary file.`);
      return bytes.toString('utf8');
    } finally {
      await handle.close().catch(() => {});
    }
  }

  async search(options: SearchOptions): Promise<SearchResult> {
    const { rel, abs } = await this.resolve(options.path);
    if (rel !== '') {
      // ripgrep given a FIFO by name would wait on it for a writer.
      const info = await stat(abs).catch(() => undefined);
      if (info && !info.isDirectory() && !info.isFile()) throw notRegular(String(options.path));
    }
    const root = await this.root();
    const rg = this.options.ripgrep?.();
    if (rg) {
      const found = await ripgrepSearch({ rg, root, under: rel, deny: this.deny, denyGlobs: this.options.denyPaths ?? [], protect: await this.protectedPaths(), ignoredAbove: rel === '' ? undefined : await ignoredAbove(root, rel) }, options);
      if (found) return found;
    }
    // One file at a time in the walk's order, read and matched on a thread of the search's own,
    // a capped number of matches: a huge tree costs time, never memory, and never holds the relay.
    const files = walkFiles({ root, under: rel, deny: this.deny, protect: await this.protectedPaths(), signal: options.signal });
    return searchFiles(files, root, { query: options.query, regex: options.regex, maxBytes: MAX_SEARCH_FILE_BYTES, maxMatches: options.maxMatches, signal: options.signal });
  }

  diagnostics(): Promise<DiagnosticsResult> {
    return Promise.resolve({ supported: false, note: 'No problems list here: `deskrelay serve` runs outside an editor. Run the project\'s checker (run_command) to see its errors.' });
  }

  async gitDiff(staged: boolean): Promise<string> {
    const root = await this.root();
    // Same paths on both sides (no renames), plain prefixes, relative to the folder: what
    // filterDiff reads each file's path from, to leave out what the agent may not read.
    const args = ['diff', '--no-color', '--no-ext-diff', '--no-textconv', '--no-renames', '--relative', '--src-prefix=a/', '--dst-prefix=b/', '--ignore-submodules=dirty', ...(staged ? ['--staged'] : []), '--', '.'];
    const result = await runSafeGit(args, root, this.commandEnv());
    if (result.missing) throw new WorkspaceError('git is not installed (or not on PATH) on the desktop.');
    if (result.code !== 0) throw new WorkspaceError(`git diff failed: ${result.stderr.trim().split('\n')[0] ?? `exit code ${result.code}`}`);
    const own = (await this.protectedPaths()).map((p) => relative(root, p).split(sep).join('/')).filter((p) => p !== '' && p !== '..' && !p.startsWith('../'));
    const { text, left } = filterDiff(result.stdout, (path) => !this.denied(path) && !own.some((p) => path === p || path.startsWith(`${p}/`)));
    if (left === 0) return text;
    return `${text}${text === '' ? '' : '\n'}(${left} changed ${left === 1 ? 'file is' : 'files are'} not shown: protected files the agent may not read.)\n`;
  }

  /**
   * Refuses now what writeFile would refuse, before the card is shown: a path through a link
   * leading out of the folder or to nothing, a denied one, and, at the last component, a
   * symbolic link (even to a file inside: the agent writes files by their own path), a folder,
   * anything but a regular file, a file with more than one name.
   */
  async checkWrite(path: string): Promise<void> {
    await this.writeTarget(path);
  }

  /** checkWrite, giving the folder-relative path. */
  private async writeTarget(path: string): Promise<string> {
    const { rel } = await this.resolve(path);
    if (rel === '') throw new WorkspaceError(`"${path}" is the folder itself.`);
    let info;
    try {
      info = await lstat(join(await this.root(), rel));
    } catch {
      return rel; // not there yet (or a parent is a file: the write says so)
    }
    if (info.isSymbolicLink()) throw linkRefused(path);
    if (info.isDirectory()) throw new WorkspaceError(`"${path}" is a folder.`);
    checkRegular(info, path);
    return rel;
  }

  /**
   * Writes with no window between the check and the write: the parent folder resolved by
   * realpath (made one folder at a time when new) and checked, the file opened without following
   * a link and without blocking, what was opened checked by fstat (and, on Linux, by the path
   * the kernel gives for the open file), and only then truncated and written.
   */
  async writeFile(path: string, content: string): Promise<void> {
    const rel = await this.writeTarget(path);
    const root = await this.root();
    const parts = rel.split('/');
    const name = parts.pop()!;
    let parent = root;
    for (const part of parts) {
      const next = join(parent, part);
      await mkdir(next).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw new WorkspaceError(`Cannot make the folder for "${path}" (${err.code ?? 'error'}).`);
      });
      parent = await realpath(next).catch(() => {
        throw new WorkspaceError(`Refused: "${path}" goes through a symbolic link to something that is not there; the agent never writes through it.`);
      });
      if (!inside(root, parent)) throw leadsOutside(path);
    }
    const abs = join(parent, name);
    this.checkWritable(root, abs, path);
    for (const own of await this.protectedPaths()) {
      if (inside(own, abs)) throw ownConfig(path);
    }
    const opened = await openChecked(abs, path, WRITE_FLAGS, 0o666);
    if (!opened) throw new WorkspaceError(`Cannot write "${path}": its folder went away.`);
    const { handle, info } = opened;
    try {
      if (info.isDirectory()) throw new WorkspaceError(`"${path}" is a folder.`);
      if (process.platform === 'linux') {
        // What the kernel opened, by its path now: a parent swapped for a link after realpath shows here.
        this.checkWritable(root, await readlink(`/proc/self/fd/${handle.fd}`).catch(() => abs), path);
      }
      await handle.truncate(0);
      await handle.writeFile(content, 'utf8');
    } finally {
      await handle.close().catch(() => {});
    }
  }

  /** Removes a regular file (never a link, a folder, a file with two names), by its real path inside the folder. */
  async removeFile(path: string): Promise<void> {
    await this.writeTarget(path);
    const { abs } = await this.resolve(path);
    this.checkWritable(await this.root(), abs, path);
    await unlink(abs).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw new WorkspaceError(`Cannot remove "${path}" (${err.code ?? 'error'}).`);
    });
  }

  /** A real path a write may reach: inside the folder and not denied. */
  private checkWritable(root: string, real: string, path: string): void {
    if (!inside(root, real)) throw leadsOutside(path);
    const realRel = relative(root, real).split(sep).join('/');
    if (realRel !== '' && isDenied(realRel, this.deny)) throw deniedError(path);
  }

  /** What a command (or git) starts from: the user's environment, scrubbed by commandEnv's rule. */
  private commandEnv(): NodeJS.ProcessEnv {
    return commandEnv(this.options.env ?? process.env, { keyNames: this.options.keyNames?.(), ...this.options.envRules?.() });
  }

  async runCommand(command: string, options: CommandOptions): Promise<CommandResult> {
    const root = await this.root();
    return runShellCommand(command, root, this.commandEnv(), options);
  }
}

const leadsOutside = (path: string) => new WorkspaceError(`Refused: "${path}" leads outside the folder (through a symbolic link); the agent works only inside it.`);
const ownConfig = (path: string) => new WorkspaceError(`Refused: "${path}" is DeskRelay's own configuration; the agent never touches it.`);

/** Where a link that leads to nothing points, as the model may be told: a path in the folder, or only "outside". */
async function linkTarget(root: string, link: string): Promise<string> {
  try {
    const target = resolvePath(dirname(link), await readlink(link));
    return inside(root, target) ? `it points to ${relative(root, target).split(sep).join('/')}` : 'it points outside the folder';
  } catch {
    return 'it points nowhere';
  }
}

/**
 * DeskRelay's own files and folders that lie inside `folder`, relative to it (by the path given
 * and by the real one): on the folder's deny list like any secret.
 */
function ownInside(folder: string, own: readonly string[]): string[] {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  const out = new Set<string>();
  for (const [base, paths] of [[folder, own], [real(folder), own.map(real)]] as const) {
    for (const p of paths) {
      const rel = relative(base, p);
      if (rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)) out.add(rel.split(sep).join('/'));
    }
  }
  return [...out];
}
