import { spawn } from 'node:child_process';
import { mkdir, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { commandEnv } from '../../commandEnv';
import { deniedError, globToRegExp, isDenied, relativeInside } from '../../paths';
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
  /** A ripgrep binary to search with (VS Code's own, or `rg` on PATH); without it, the plain JS search. */
  ripgrep?: () => string | undefined;
}

/** Files larger than this are not read whole or searched: the agent is for source, not data. */
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
const MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024;
const GIT_TIMEOUT_MS = 30_000;
const GIT_MAX_BYTES = 1024 * 1024;

const inside = (root: string, real: string) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);

/** `~`-shortened, as the desk shows a path. */
export function shortPath(path: string, home = homedir()): string {
  return home && inside(home, path) ? `~${path.slice(home.length).replace(/\\/g, '/')}` : path;
}

/** The CLI's Workspace: node fs in one folder, `git` when present, ripgrep when given one else a plain search on a thread of its own, commands in their own process group. */
export class NodeWorkspace implements Workspace {
  readonly name: string;
  readonly displayPath: string;
  private readonly deny: RegExp[];
  private rootReal: Promise<string>;

  get absolutePath(): string {
    return this.options.folder;
  }

  constructor(private readonly options: NodeWorkspaceOptions) {
    this.name = options.name ?? (basename(options.folder) || options.folder);
    this.displayPath = shortPath(options.folder);
    this.deny = (options.denyPaths ?? []).filter((g) => g.trim() !== '').map(globToRegExp);
    this.rootReal = realpath(options.folder);
    this.rootReal.catch(() => {});
  }

  /**
   * The real path of a folder-relative path, checked: inside the folder once symbolic links
   * are resolved (for a file not there yet, its nearest existing folder is), not denied under
   * its real name either, and never in DeskRelay's config dir.
   */
  async resolve(input: unknown, what = 'path'): Promise<{ rel: string; abs: string }> {
    const rel = relativeInside(input, this.deny, what);
    const root = await this.root();
    let probe = join(root, rel);
    let rest = '';
    let real: string | undefined;
    while (real === undefined) {
      try {
        real = await realpath(probe);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new WorkspaceError(`Cannot reach "${String(input)}" (${code ?? 'error'}).`);
        const up = dirname(probe);
        if (up === probe) throw new WorkspaceError(`Cannot reach "${String(input)}".`);
        rest = rest === '' ? basename(probe) : join(basename(probe), rest);
        probe = up;
      }
    }
    const abs = rest === '' ? real : join(real, rest);
    if (!inside(root, abs)) throw new WorkspaceError(`Refused: "${String(input)}" leads outside the folder (through a symbolic link); the agent works only inside it.`);
    const realRel = relative(root, abs).split(sep).join('/');
    if (realRel !== '' && isDenied(realRel, this.deny)) throw deniedError(String(input));
    for (const real of await this.protectedPaths()) {
      if (inside(real, abs)) throw new WorkspaceError(`Refused: "${String(input)}" is DeskRelay's own configuration; the agent never touches it.`);
    }
    return { rel, abs };
  }

  /** DeskRelay's own files, resolved: never reachable, never listed, never searched. */
  private async protectedPaths(): Promise<string[]> {
    return Promise.all([this.options.configDir, ...(this.options.protect ?? [])].map((own) => realpath(own).catch(() => own)));
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
    let info;
    try {
      info = await stat(abs);
    } catch {
      return undefined;
    }
    if (info.isDirectory()) throw new WorkspaceError(`"${path}" is a folder; list_files shows what is in it.`);
    if (info.size > MAX_FILE_BYTES) throw new WorkspaceError(`"${path}" is ${info.size} bytes; the agent reads files up to ${MAX_FILE_BYTES} bytes.`);
    const bytes = await readFile(abs);
    if (bytes.subarray(0, 8192).includes(0)) throw new WorkspaceError(`"${path}" is a binary file.`);
    return bytes.toString('utf8');
  }

  async search(options: SearchOptions): Promise<SearchResult> {
    const { rel } = await this.resolve(options.path);
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
    const excludes = [...DENIED_PATHSPECS, ...(this.options.denyPaths ?? []).filter((g) => g.trim() !== '').map((g) => `:(exclude,glob)${g.includes('/') ? g.replace(/^\/+/, '') : `**/${g}`}`)];
    // A repository's own config must not run programs on a read: no fsmonitor hook, no external
    // diff driver, no textconv filter.
    const args = ['-c', 'core.fsmonitor=false', '-c', 'diff.external=', 'diff', '--no-color', '--no-ext-diff', '--no-textconv', ...(staged ? ['--staged'] : []), '--', '.', ...excludes];
    const result = await runGit(args, root, commandEnv(this.options.env ?? process.env, this.options.keyNames?.() ?? []));
    if (result.missing) throw new WorkspaceError('git is not installed (or not on PATH) on the desktop.');
    if (result.code !== 0) throw new WorkspaceError(`git diff failed: ${result.stderr.trim().split('\n')[0] ?? `exit code ${result.code}`}`);
    return result.stdout;
  }

  async writeFile(path: string, content: string): Promise<void> {
    const { abs } = await this.resolve(path);
    try {
      if ((await stat(abs)).isDirectory()) throw new WorkspaceError(`"${path}" is a folder.`);
    } catch (err) {
      if (err instanceof WorkspaceError) throw err;
    }
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, content, 'utf8');
  }

  async runCommand(command: string, options: CommandOptions): Promise<CommandResult> {
    const root = await this.root();
    return runShellCommand(command, root, commandEnv(this.options.env ?? process.env, this.options.keyNames?.() ?? []), options);
  }
}

const DENIED_PATHSPECS = ['.env', '.env.*', '*.pem', '*.key', 'id_rsa*', 'id_ed25519*', '.npmrc', '.netrc'].map((g) => `:(exclude,glob)**/${g}`);

function runGit(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string; missing: boolean }> {
  return new Promise((resolve) => {
    const child = spawn('git', args, { cwd, env: { ...env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => child.kill('SIGKILL'), GIT_TIMEOUT_MS);
    child.stdout.on('data', (c: Buffer) => {
      if (size < GIT_MAX_BYTES) out.push(c);
      size += c.length;
    });
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.stdout.on('error', () => {});
    child.stderr.on('error', () => {});
    child.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ code: null, stdout: '', stderr: e.message, missing: e.code === 'ENOENT' });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), missing: false });
    });
  });
}
