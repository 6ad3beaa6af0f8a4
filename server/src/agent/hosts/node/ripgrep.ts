import { spawn } from 'node:child_process';
import { accessSync, constants, lstatSync } from 'node:fs';
import { delimiter, join, sep } from 'node:path';
import { DENIED_GLOBS, isDenied } from '../../paths';
import type { SearchOptions, SearchResult } from '../../workspace';

const MAX_MATCH_CHARS = 300;
const RG_TIMEOUT_MS = 60_000;

/**
 * The first of `candidates`, then of `rg` in the PATH's folders, that this process may run; undefined
 * when there is none (the plain search answers). The CLI looks on PATH only; VS Code's host puts the
 * ripgrep VS Code ships first.
 */
export function findRipgrep(candidates: readonly string[] = [], env: NodeJS.ProcessEnv = process.env, platform = process.platform): string | undefined {
  const exe = platform === 'win32' ? 'rg.exe' : 'rg';
  const onPath = (env.PATH ?? env.Path ?? '').split(delimiter).filter((d) => d !== '').map((d) => join(d, exe));
  return [...candidates, ...onPath].find(isExecutable);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface RipgrepSearch {
  /** The rg binary. */
  rg: string;
  /** The folder's real path. */
  root: string;
  /** Where to search, relative to root ('' for all). */
  under: string;
  deny: readonly RegExp[];
  denyGlobs: readonly string[];
  /** Real paths never searched (DeskRelay's config folder). */
  protect: readonly string[];
  /** Whether a path is ignored by a .gitignore above `under` (which ripgrep is told not to read). */
  ignoredAbove?: (rel: string) => boolean;
}

/**
 * The search through ripgrep: the same rules as the plain search (the folder's .gitignore files
 * honoured even outside a repository, and only those: not a .gitignore above the folder, such
 * as a home folder's, nor .ignore, .git/info/exclude or the global excludes file; hidden files
 * searched, links not followed, files over 2 MiB skipped, denied and protected files never
 * reported), in path order. Resolves undefined when rg cannot run or refuses the pattern (the
 * caller falls back to the plain search).
 */
export function ripgrepSearch(opts: RipgrepSearch, search: SearchOptions): Promise<SearchResult | undefined> {
  const args = ['--json', '--no-config', '--no-require-git', '--no-ignore-parent', '--no-ignore-dot', '--no-ignore-exclude', '--no-ignore-global', '--hidden', '--sort', 'path', '--max-filesize', '2M'];
  // The deny list as ripgrep globs, in any case: a fast path only, every match is checked again with isDenied.
  for (const glob of [...DENIED_GLOBS, ...opts.denyGlobs]) if (glob.trim() !== '') args.push('--iglob', `!${glob}`);
  args.push(...(search.regex ? [] : ['--fixed-strings']), '-e', search.query, '--', opts.under === '' ? '.' : opts.under);
  return new Promise((resolve) => {
    const child = spawn(opts.rg, args, { cwd: opts.root, stdio: ['ignore', 'pipe', 'pipe'] });
    const matches: SearchResult['matches'] = [];
    let truncated = false;
    let rest = '';
    let settled = false;
    let searched = false;
    const done = (result: SearchResult | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      search.signal?.removeEventListener('abort', stop);
      if (child.exitCode === null) child.kill('SIGKILL');
      resolve(result);
    };
    const stop = () => done({ matches, truncated: true });
    const timer = setTimeout(stop, RG_TIMEOUT_MS);
    search.signal?.addEventListener('abort', stop, { once: true });
    // A file with more than one name (a hard link to a secret or an outside file) is never
    // reported, as read_file refuses it: one lstat per file that matched (matches are capped).
    const linked = new Map<string, boolean>();
    const hasOtherNames = (abs: string) => {
      let answer = linked.get(abs);
      if (answer === undefined) {
        try {
          const info = lstatSync(abs);
          answer = !info.isFile() || info.nlink > 1;
        } catch {
          answer = true;
        }
        linked.set(abs, answer);
      }
      return answer;
    };
    const take = (line: string) => {
      if (line === '' || settled) return;
      let event: { type?: string; data?: { path?: { text?: string }; lines?: { text?: string }; line_number?: number } };
      try {
        event = JSON.parse(line) as typeof event;
      } catch {
        return;
      }
      if (event.type === 'summary') searched = true;
      if (event.type !== 'match' || !event.data?.path?.text || event.data.lines?.text === undefined) return;
      const path = event.data.path.text.replace(/^\.[\\/]/, '').split(sep).join('/');
      const abs = join(opts.root, path);
      if (isDenied(path, opts.deny) || opts.protect.some((p) => abs === p || abs.startsWith(p + sep)) || opts.ignoredAbove?.(path) || hasOtherNames(abs)) return;
      if (matches.length >= search.maxMatches) {
        truncated = true;
        done({ matches, truncated });
        return;
      }
      const text = event.data.lines.text.replace(/\r?\n$/, '');
      matches.push({ path, line: event.data.line_number ?? 0, text: text.length > MAX_MATCH_CHARS ? `${text.slice(0, MAX_MATCH_CHARS)}…` : text });
    };
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) take(line);
    });
    child.stdout.on('error', () => {});
    child.stderr.on('data', () => {});
    child.stderr.on('error', () => {});
    child.once('error', () => done(undefined));
    // 0: matches, 1: none, 2: an error. After a search (its summary came), the error was a file
    // it could not read, which the plain search skips too: the answer stands. Before one (a bad
    // pattern, say), the plain search answers instead.
    child.once('close', (code) => {
      take(rest);
      done(code === 0 || code === 1 || (code === 2 && searched) ? { matches, truncated } : undefined);
    });
  });
}
