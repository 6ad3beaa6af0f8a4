/**
 * What an approved command changed in a git folder (issue 38 item 9): the working state taken
 * before it (`git stash create`, a commit object that touches neither the tree, the index nor
 * refs/stash, and the untracked files), compared after it. Git runs as the agent's read-only git
 * does (runSafeGit: no shell, no hooks, filters or helpers, no GIT_* of the desk's). Each path is
 * checked against the deny list before git is asked for its contents, and read now through the
 * workspace (its own refusals: links, denied and protected files, binary and large files). Any
 * failure gives nothing: the command's result never depends on this.
 */
import { commandEnv } from './commandEnv';
import { runSafeGit } from './hosts/node/git';
import { relativeInside } from './paths';
import type { Workspace } from './workspace';

/** One file a command changed: undefined is "no file there". */
export interface CommandChange {
  path: string;
  before: string | undefined;
  after: string | undefined;
}

/** Regular files only: a link's or a submodule's entry is not a file's text. */
const FILE_MODE = /^(?:100644|100755)$/;

async function git(args: string[], cwd: string): Promise<string> {
  const r = await runSafeGit(args, cwd, commandEnv(process.env));
  if (r.code !== 0 || r.cut) throw new Error(`git ${args.find((a) => !a.startsWith('-') && !a.includes('=')) ?? ''} failed (exit ${r.code ?? 'none'}${r.cut ? ', output cut' : ''})`);
  return r.stdout;
}

const untracked = async (cwd: string) => new Set((await git(['ls-files', '--others', '--exclude-standard', '-z', '--', '.'], cwd)).split('\0').filter(Boolean));

/** A folder-relative path the deny list and the folder's bounds allow, or undefined. */
function allowed(path: string): string | undefined {
  try {
    return relativeInside(path, []) || undefined;
  } catch {
    return undefined;
  }
}

/** Where a command's changes go, one at a time: `wants` says whether a path is still taken (the session's limits). */
export interface ChangeSink {
  wants(path: string): boolean;
  take(change: CommandChange): Promise<void>;
}

/**
 * The folder's state before a command, and a function handing `sink` what the command changed
 * since (a tree-wide format is not read file by file past the sink's limits); undefined when the
 * folder is no git work tree with a commit, or git failed.
 */
export async function beforeCommand(workspace: Workspace, log: (message: string) => void): Promise<((sink: ChangeSink) => Promise<void>) | undefined> {
  const cwd = workspace.absolutePath;
  if (!cwd) return undefined;
  let snapshot: string;
  let known: Set<string>;
  const [inside, head] = await git(['rev-parse', '--is-inside-work-tree', '--verify', 'HEAD'], cwd).then((out) => out.trim().split('\n'), () => []);
  // Not a git folder (or no commit yet): commands' changes are not listed there.
  if (inside !== 'true' || !head) return undefined;
  try {
    // A commit needs a name: the repository's own may be in the user's global config, which safe git skips.
    const made = await git(['-c', 'user.name=DeskRelay', '-c', 'user.email=deskrelay@localhost', 'stash', 'create'], cwd).catch(async (e: unknown) => {
      // Without the optional index refresh, a file only touched makes it fail with nothing to save: clean if diff says so.
      if ((await runSafeGit(['diff', '--quiet', '--ignore-submodules=all', 'HEAD', '--', '.'], cwd, commandEnv(process.env))).code === 0) return '';
      throw e;
    });
    snapshot = made.trim() || head;
    known = await untracked(cwd);
  } catch (e) {
    log(`a command's changes are not listed: ${e instanceof Error ? e.message : 'git failed'}`);
    return undefined;
  }
  return async (sink) => {
    try {
      const raw = (await git(['diff', '--raw', '-z', '--no-renames', '--relative', '--ignore-submodules=all', '--no-ext-diff', '--no-textconv', snapshot, '--', '.'], cwd)).split('\0');
      const found: { path: string; was: boolean }[] = [];
      for (let i = 0; i + 1 < raw.length; i += 2) {
        // `:<old mode> <new mode> <old sha> <new sha> <status>` then the path.
        const [oldMode, newMode, , , status] = raw[i]!.slice(1).split(' ');
        const was = status !== 'A';
        if ((was && !FILE_MODE.test(oldMode!)) || (status !== 'D' && !FILE_MODE.test(newMode!))) continue;
        found.push({ path: raw[i + 1]!, was });
      }
      for (const path of await untracked(cwd)) if (!known.has(path)) found.push({ path, was: false });
      for (const f of found) {
        const path = allowed(f.path);
        if (!path || !sink.wants(path)) continue;
        const after = await workspace.readIfExists(path).then((text) => ({ text }), () => undefined);
        if (!after) continue;
        const before = f.was ? await git(['show', `${snapshot}:./${path}`], cwd).catch(() => null) : undefined;
        if (before === null || before?.slice(0, 8192).includes('\0')) continue;
        await sink.take({ path, before, after: after.text });
      }
    } catch (e) {
      log(`a command's changes are not listed: ${e instanceof Error ? e.message : 'git failed'}`);
    }
  };
}
