import { spawn } from 'node:child_process';

/** Git for Windows reads this name as `nul` too, where it opens files. */
const devNull = '/dev/null';
const GIT_TIMEOUT_MS = 30_000;
const GIT_MAX_BYTES = 1024 * 1024;

export interface GitResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** git is not installed (or not on PATH). */
  missing: boolean;
  /** The output went past its cap and was cut. */
  cut: boolean;
}

/**
 * Config that stops git from starting any program a config file or an attribute names, for a
 * git the agent runs without asking. Given on git's command line (GIT_CONFIG_COUNT, which wins
 * over every file and passes on to the gits git itself starts), beside the system and global
 * files being skipped altogether (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL).
 */
const SAFE_CONFIG: readonly (readonly [string, string])[] = [
  ['core.fsmonitor', 'false'],
  // A hook folder that cannot hold a hook: `git diff` refreshing a stale index entry runs post-index-change.
  ['core.hooksPath', devNull],
  ['core.pager', 'cat'],
  ['core.attributesFile', devNull],
  ['core.askPass', ''],
  ['core.sshCommand', ''],
  ['credential.helper', ''],
  ['diff.external', ''],
  // A partial clone fetches missing objects on a read, through ssh, helpers or a remote's
  // uploadpack: no transport at all, so the read fails instead.
  ['protocol.allow', 'never'],
  ['submodule.recurse', 'false'],
  ['diff.noprefix', 'false'],
  ['diff.mnemonicPrefix', 'false'],
  ['core.quotePath', 'true'],
];

/**
 * The environment a safe git gets: the command environment without a single GIT_* variable of
 * the desk's (GIT_DIR, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, GIT_CONFIG_PARAMETERS, GIT_EXEC_PATH
 * would each steer it), no askpass, and `config` given as command-line config.
 */
function safeEnv(env: NodeJS.ProcessEnv, config: readonly (readonly [string, string])[]): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) if (!/^GIT_|^SSH_ASKPASS$/i.test(name)) out[name] = value;
  Object.assign(out, {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: devNull,
    GIT_ATTR_NOSYSTEM: '1',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    PAGER: 'cat',
    GIT_CONFIG_COUNT: String(config.length),
  });
  config.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${i}`] = key;
    out[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return out;
}

/**
 * Runs git for the agent without an approval: nothing a repository's (or the user's, or the
 * system's) config or attributes name may run. Filters are the one kind no flag turns off: a
 * `filter.<name>.clean` or `.process` runs when `git diff` reads a changed file whose attributes
 * name it, so each filter the repository's config defines is first listed (by a `git config`
 * that runs nothing) and then emptied by name, `required` off, for the real call.
 */
export async function runSafeGit(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<GitResult> {
  const listed = await runGit(['config', '-z', '--name-only', '--get-regexp', '^filter\\.'], cwd, safeEnv(env, SAFE_CONFIG));
  if (listed.missing) return listed;
  // 1 is "none"; any other failure, or a list cut short, leaves filters unknown: no diff then.
  if ((listed.code !== 0 && listed.code !== 1) || listed.cut) return { ...listed, code: listed.code || 1, stderr: listed.stderr || 'could not read the repository\'s filters' };
  const filters = new Set<string>();
  for (const key of listed.stdout.split('\0')) {
    const first = key.indexOf('.');
    const last = key.lastIndexOf('.');
    if (first > 0 && last > first) filters.add(key.slice(first + 1, last));
  }
  const off = [...filters].flatMap((name) => ['clean', 'smudge', 'process', 'required'].map((v): [string, string] => [`filter.${name}.${v}`, v === 'required' ? 'false' : '']));
  return runGit(['--no-pager', ...args], cwd, safeEnv(env, [...SAFE_CONFIG, ...off]));
}

function runGit(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<GitResult> {
  return new Promise((resolve) => {
    const child = spawn('git', args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
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
      resolve({ code: null, stdout: '', stderr: e.message, missing: e.code === 'ENOENT', cut: false });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), missing: false, cut: size > GIT_MAX_BYTES });
    });
  });
}
