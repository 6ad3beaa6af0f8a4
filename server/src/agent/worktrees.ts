import { mkdir, realpath, rm } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { runSafeGit } from './hosts/node/git';
import { WorkspaceError } from './workspace';

/** A session's own git worktree: where it is, its branch, and the project it came from. */
export interface SessionWorktree {
  /** The worktree folder (absolute), in `<configDir>/worktrees/`. */
  path: string;
  /** `deskrelay/<short id>`. */
  branch: string;
  /** The project folder (absolute): where Merge runs. */
  project: string;
}

export const worktreesDir = (configDir: string) => join(configDir, 'worktrees');

const fail = (what: string, stderr: string) => new WorkspaceError(`${what}: ${stderr.trim().split('\n').at(-1) || 'git failed'}`);

/**
 * `git worktree add -b deskrelay/<short> <configDir>/worktrees/<name>-<short> HEAD` in the
 * project, through the safe git (no hooks, no filters, no programs the repository's config
 * names: it asks nobody). Refused when the config folder lies inside the project.
 */
export async function addWorktree(project: string, configDir: string, name: string, short: string, env: NodeJS.ProcessEnv): Promise<SessionWorktree> {
  const root = await realpath(project);
  const dir = worktreesDir(configDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const realDir = await realpath(dir);
  const rel = relative(root, realDir);
  if (rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep))) throw new WorkspaceError("DeskRelay's config folder is inside the project: a worktree there would be inside the project too.");
  const top = await runSafeGit(['rev-parse', '--show-toplevel'], root, env);
  if (top.missing) throw new WorkspaceError('git is not installed (or not on PATH) on the desktop.');
  if (top.code !== 0) throw fail(`"${name}" is not a git repository`, top.stderr);
  const path = join(realDir, `${name.replace(/[^A-Za-z0-9._-]/g, '_')}-${short}`);
  const branch = `deskrelay/${short}`;
  const added = await runSafeGit(['worktree', 'add', '-q', '-b', branch, path, 'HEAD'], root, env);
  if (added.code !== 0) throw fail('git worktree add failed', added.stderr);
  return { path, branch, project: root };
}

/** Removes the worktree (its changes too) and its branch. */
export async function removeWorktree(w: SessionWorktree, env: NodeJS.ProcessEnv): Promise<void> {
  const removed = await runSafeGit(['worktree', 'remove', '--force', w.path], w.project, env);
  if (removed.code !== 0) {
    // A worktree folder already gone: forget it.
    await rm(w.path, { recursive: true, force: true });
    await runSafeGit(['worktree', 'prune'], w.project, env);
  }
  const branch = await runSafeGit(['branch', '-D', w.branch], w.project, env);
  if (branch.code !== 0 && !/not found/.test(branch.stderr)) throw fail('git branch -D failed', branch.stderr);
}

/** The project's current branch (what Merge merges into); undefined on a detached HEAD. */
export async function currentBranch(project: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const r = await runSafeGit(['symbolic-ref', '--short', '-q', 'HEAD'], project, env);
  return r.code === 0 ? r.stdout.trim() || undefined : undefined;
}

/** Quoted for /bin/sh: the card shows exactly what runs. */
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The one line Merge runs in the project (asked like a command): the worktree's changes
 * committed on its branch (when there are any), then a normal `git merge` of that branch.
 */
export function mergeCommand(w: SessionWorktree, short: string): string {
  const wt = `git -C ${q(w.path)}`;
  return `${wt} add -A && { ${wt} diff --cached --quiet || ${wt} commit -q -m ${q(`DeskRelay agent session ${short}`)}; } && git merge --no-edit ${q(w.branch)}`;
}
