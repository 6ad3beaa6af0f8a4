// The CLI's Workspace host on a real temporary git repository: what stays inside the folder,
// what is never reachable, and the read/search/diff/write/command primitives the tools stand on.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandEnv } from '../../server/src/agent/commandEnv';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import { findRipgrep } from '../../server/src/agent/hosts/node/ripgrep';
import { globToRegExp, isDenied } from '../../server/src/agent/paths';
import { WorkspaceError } from '../../server/src/agent/workspace';
import { alive } from './support';

let base: string;
let repo: string;
let ws: NodeWorkspace;
const config = () => join(repo, '.deskrelay-config');

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-ws-')));
  repo = join(base, 'proj');
  mkdirSync(join(repo, 'src', 'deep'), { recursive: true });
  mkdirSync(join(repo, 'build'));
  mkdirSync(join(repo, 'secrets'));
  writeFileSync(join(repo, 'src', 'a.ts'), 'export const a = 1;\nexport function hello() {\n  return "hello";\n}\n');
  writeFileSync(join(repo, 'src', 'deep', 'b.ts'), 'import { a } from "../a";\nconsole.log(a, "hello");\n');
  writeFileSync(join(repo, 'build', 'out.js'), 'hello from build\n');
  writeFileSync(join(repo, '.gitignore'), 'build/\n*.log\n');
  writeFileSync(join(repo, 'debug.log'), 'hello log\n');
  writeFileSync(join(repo, '.env'), 'SECRET=hello\n');
  writeFileSync(join(repo, '.env.local'), 'SECRET=hello\n');
  writeFileSync(join(repo, 'server.pem'), 'hello pem\n');
  writeFileSync(join(repo, 'secrets', 'token.txt'), 'hello secret\n');
  writeFileSync(join(base, 'outside.txt'), 'outside hello\n');
  symlinkSync(join(base, 'outside.txt'), join(repo, 'link-out.txt'));
  symlinkSync(base, join(repo, 'link-dir'));
  symlinkSync(join(repo, '.env'), join(repo, 'env-link'));
  mkdirSync(config());
  writeFileSync(join(config(), 'token'), 'tok\n');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore' });
  git('init', '-q');
  git('-c', 'user.email=t@t', '-c', 'user.name=t', 'add', 'src', '.gitignore');
  git('-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'init');
  ws = new NodeWorkspace({ folder: repo, configDir: config(), denyPaths: ['secrets/'] });
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

const a0 = (r: { matches: unknown[] }) => r.matches[0];

const refused = async (p: Promise<unknown>, re: RegExp) => {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(WorkspaceError);
  expect((err as Error).message).toMatch(re);
};

describe('path safety', () => {
  it('refuses .., absolute paths and home paths as a WorkspaceError', async () => {
    await refused(ws.readFile('../outside.txt'), /outside the folder/);
    await refused(ws.readFile('src/../../outside.txt'), /outside the folder/);
    await refused(ws.readFile(join(base, 'outside.txt')), /not a path relative/);
    await refused(ws.readFile('~/.bashrc'), /not a path relative/);
    await refused(ws.writeFile('../evil.txt', 'x'), /outside the folder/);
  });

  it('refuses symbolic links that resolve outside, and links onto denied files', async () => {
    await refused(ws.readFile('link-out.txt'), /symbolic link/);
    await refused(ws.readFile('link-dir/outside.txt'), /symbolic link/);
    await refused(ws.writeFile('link-dir/new.txt', 'x'), /symbolic link/);
    await refused(ws.readFile('env-link'), /protected/);
  });

  it('refuses secrets, git internals, configured denyPaths and the config dir', async () => {
    for (const p of ['.env', '.env.local', 'server.pem', 'x/id_rsa', 'id_ed25519.pub', '.npmrc', '.netrc', 'a.key', '.git/config', '.git/hooks/pre-commit', 'secrets/token.txt']) {
      await refused(ws.readFile(p), /protected/);
    }
    await refused(ws.writeFile('.git/hooks/post-checkout', '#!/bin/sh\n'), /protected/);
    await refused(ws.readFile('.deskrelay-config/token'), /DeskRelay's own configuration/);
    expect(isDenied('src/app.ts')).toBe(false);
    expect(isDenied('src/.environment')).toBe(false);
  });

  it('globs: a name matches at any depth, a path from the folder root', () => {
    expect(globToRegExp('*.sqlite').test('data/x.sqlite')).toBe(true);
    expect(globToRegExp('secrets/').test('secrets/a/b.txt')).toBe(true);
    expect(globToRegExp('secrets/').test('src/secrets/a')).toBe(false);
    expect(globToRegExp('src/**/*.test.ts').test('src/a/b/c.test.ts')).toBe(true);
    expect(globToRegExp('src/**/*.test.ts').test('src/c.test.ts')).toBe(true);
  });
});

describe('reads', () => {
  it('lists files honouring .gitignore, without denied files or git internals', async () => {
    const { files } = await ws.listFiles({ maxEntries: 100 });
    expect(files).toContain('src/a.ts');
    expect(files).toContain('src/deep/b.ts');
    expect(files).toContain('.gitignore');
    for (const hidden of ['build/out.js', 'debug.log', '.env', '.env.local', 'server.pem', 'secrets/token.txt', 'link-out.txt', '.deskrelay-config/token']) expect(files).not.toContain(hidden);
    expect(files.some((f) => f.startsWith('.git/'))).toBe(false);
    const ts = await ws.listFiles({ pattern: '*.ts', path: 'src', maxEntries: 1 });
    expect(ts).toEqual({ files: ['src/a.ts'], truncated: true });
  });

  it('searches plain text and regular expressions, honouring .gitignore and the deny list', async () => {
    const plain = await ws.search({ query: 'hello', regex: false, maxMatches: 50 });
    expect(plain.matches.map((m) => `${m.path}:${m.line}`)).toEqual(['src/a.ts:2', 'src/a.ts:3', 'src/deep/b.ts:2']);
    const re = await ws.search({ query: '^import .* from', regex: true, maxMatches: 50, path: 'src/deep' });
    expect(re.matches).toEqual([{ path: 'src/deep/b.ts', line: 1, text: 'import { a } from "../a";' }]);
    expect((await ws.search({ query: 'hello', regex: false, maxMatches: 1 })).truncated).toBe(true);
    // DeskRelay's token in its config folder is never searched.
    expect((await ws.search({ query: 'tok', regex: false, maxMatches: 50 })).matches).toEqual([]);
    await refused(ws.search({ query: '(', regex: true, maxMatches: 1 }), /not valid/);
  });

  // VS Code's host searches with ripgrep when it finds one (Debian's `ripgrep` package here): the same answers.
  const rg = (() => {
    try {
      execFileSync('rg', ['--version'], { stdio: 'ignore' });
      return 'rg';
    } catch {
      return undefined;
    }
  })();
  it.skipIf(!rg)('searches through ripgrep with the same answers and the same refusals', async () => {
    // A wrapper that notes each run, so the test knows ripgrep answered and not the fallback.
    const wrapper = join(base, 'rg-wrapper.sh');
    writeFileSync(wrapper, `#!/bin/sh\necho run >> ${join(base, 'rg-runs')}\nexec rg "$@"\n`, { mode: 0o755 });
    const runs = () => readFileSync(join(base, 'rg-runs'), 'utf8').split('\n').length - 1;
    const viaRg = new NodeWorkspace({ folder: repo, configDir: config(), denyPaths: ['secrets/'], ripgrep: () => wrapper });
    const plain = await viaRg.search({ query: 'hello', regex: false, maxMatches: 50 });
    expect(plain.matches.map((m) => `${m.path}:${m.line}`)).toEqual(['src/a.ts:2', 'src/a.ts:3', 'src/deep/b.ts:2']);
    const re = await viaRg.search({ query: '^import .* from', regex: true, maxMatches: 50, path: 'src/deep' });
    expect(re.matches).toEqual([{ path: 'src/deep/b.ts', line: 1, text: 'import { a } from "../a";' }]);
    expect(await viaRg.search({ query: 'hello', regex: false, maxMatches: 2 })).toMatchObject({ truncated: true, matches: [{ line: 2 }, { line: 3 }] });
    expect((await viaRg.search({ query: 'tok', regex: false, maxMatches: 50 })).matches).toEqual([]);
    expect((await viaRg.search({ query: 'SECRET', regex: false, maxMatches: 50 })).matches).toEqual([]);
    expect(runs()).toBe(5);
    // The answer is ripgrep's own, not the fallback's: ripgrep does not follow a link to a file
    // inside the folder, the plain search does.
    const small = join(base, 'rgproj');
    mkdirSync(small);
    writeFileSync(join(small, 'a.txt'), 'needle\n');
    symlinkSync(join(small, 'a.txt'), join(small, 'link.txt'));
    const where = async (w: NodeWorkspace) => (await w.search({ query: 'needle', regex: false, maxMatches: 9 })).matches.map((m) => m.path);
    expect(await where(new NodeWorkspace({ folder: small, configDir: config(), ripgrep: () => wrapper }))).toEqual(['a.txt']);
    expect(await where(new NodeWorkspace({ folder: small, configDir: config() }))).toEqual(['a.txt', 'link.txt']);
    // A pattern ripgrep refuses falls back to the plain search, which explains it.
    await refused(viaRg.search({ query: '(', regex: true, maxMatches: 1 }), /not valid/);
  });

  it.skipIf(!rg)('with and without ripgrep: the same answers, from the folder\'s own .gitignore files only, never a secret, denied or outside file', async () => {
    // outer/.gitignore is above the folder (a home folder's, say): neither search may honour it,
    // nor a .ignore file, which only ripgrep would read by default.
    const outer = join(base, 'outer');
    const dir = join(outer, 'ws');
    mkdirSync(join(dir, 'pkg', 'gen'), { recursive: true });
    mkdirSync(join(dir, 'pkg', 'dist'), { recursive: true });
    mkdirSync(join(dir, 'pkg', 'keys'), { recursive: true });
    mkdirSync(join(dir, 'private'), { recursive: true });
    writeFileSync(join(outer, '.gitignore'), '*.md\nws/\n');
    writeFileSync(join(dir, '.gitignore'), 'pkg/dist/\n*.tmp\n');
    writeFileSync(join(dir, '.ignore'), 'notes.txt\n');
    writeFileSync(join(dir, 'pkg', '.gitignore'), 'gen/\n');
    writeFileSync(join(dir, 'README.md'), 'needle in the readme\n');
    writeFileSync(join(dir, 'notes.txt'), 'a needle\nand another needle\n');
    writeFileSync(join(dir, 'scratch.tmp'), 'needle (ignored)\n');
    writeFileSync(join(dir, 'pkg', 'index.ts'), 'export const needle = 1;\n// no match here\nneedle();\n');
    writeFileSync(join(dir, 'pkg', 'gen', 'out.ts'), 'needle (ignored by pkg/.gitignore)\n');
    writeFileSync(join(dir, 'pkg', 'dist', 'out.js'), 'needle (ignored by the root .gitignore, inside pkg)\n');
    writeFileSync(join(dir, 'pkg', 'keys', 'server.key'), 'needle (a secret)\n');
    writeFileSync(join(dir, '.env'), 'NEEDLE=secret\nneedle\n');
    writeFileSync(join(dir, 'private', 'plan.txt'), 'needle (denyPaths)\n');
    writeFileSync(join(base, 'far.txt'), 'needle outside the folder\n');
    symlinkSync(join(base, 'far.txt'), join(dir, 'far-link.txt'));
    symlinkSync(base, join(dir, 'base-link'));
    const own = join(dir, '.deskrelay');
    mkdirSync(own);
    writeFileSync(join(own, 'config.json'), '{"needle": true}\n');
    const runs = join(base, 'rg-runs-2');
    const wrapper = join(base, 'rg-wrapper-2.sh');
    writeFileSync(wrapper, `#!/bin/sh\necho run >> ${runs}\nexec rg "$@"\n`, { mode: 0o755 });
    const options = { folder: dir, configDir: own, denyPaths: ['private/'] };
    const plain = new NodeWorkspace(options);
    const viaRg = new NodeWorkspace({ ...options, ripgrep: () => wrapper });
    const where = (r: { matches: { path: string; line: number }[] }) => r.matches.map((m) => `${m.path}:${m.line}`);
    const all = ['README.md:1', 'notes.txt:1', 'notes.txt:2', 'pkg/index.ts:1', 'pkg/index.ts:3'];
    for (const [query, path, maxMatches, expected, truncated] of [
      ['needle', undefined, 50, all, false],
      ['needle', 'pkg', 50, ['pkg/index.ts:1', 'pkg/index.ts:3'], false],
      ['needle', undefined, 3, all.slice(0, 3), true],
      ['^needle\\(', undefined, 50, ['pkg/index.ts:3'], false],
    ] as const) {
      const regex = query.startsWith('^');
      const a = await plain.search({ query, path, regex, maxMatches });
      const b = await viaRg.search({ query, path, regex, maxMatches });
      expect(where(a), `${query} under ${path ?? '.'}`).toEqual(expected);
      expect(b, `${query} under ${path ?? '.'} through ripgrep`).toEqual(a);
      expect(a.truncated).toBe(truncated);
    }
    expect(a0(await viaRg.search({ query: 'needle', regex: false, maxMatches: 50 }))).toEqual({ path: 'README.md', line: 1, text: 'needle in the readme' });
    expect(readFileSync(runs, 'utf8').split('\n').length - 1).toBe(5);
  });

  // As root every file is readable: ripgrep runs as nobody there (runuser), so one can be made unreadable.
  const asRoot = process.getuid?.() === 0;
  const runuser = asRoot ? ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((p) => existsSync(p)) : undefined;
  it.skipIf(!rg || (asRoot && !runuser))('a file ripgrep cannot read is left out and the rest of its answer stands', async () => {
    const dir = join(base, 'unreadable');
    mkdirSync(join(dir, 'locked'), { recursive: true });
    writeFileSync(join(dir, 'a.txt'), 'needle\n');
    writeFileSync(join(dir, 'locked', 'b.txt'), 'needle\n', { mode: 0o000 });
    symlinkSync(join(dir, 'a.txt'), join(dir, 'link.txt'));
    for (const d of [base, dir, join(dir, 'locked')]) chmodSync(d, 0o755);
    const wrapper = join(base, 'rg-as-nobody.sh');
    writeFileSync(wrapper, asRoot ? `#!/bin/sh\nexec ${runuser} -u nobody -- rg "$@"\n` : '#!/bin/sh\nexec rg "$@"\n', { mode: 0o755 });
    const found = await new NodeWorkspace({ folder: dir, configDir: config(), ripgrep: () => wrapper }).search({ query: 'needle', regex: false, maxMatches: 9 });
    // ripgrep's own answer (it does not follow link.txt; the plain search would), though it
    // exited 2 for the file it could not read.
    expect(found).toEqual({ matches: [{ path: 'a.txt', line: 1, text: 'needle' }], truncated: false });
  });

  it('finds rg on PATH (after the candidates given), or none', () => {
    const bin = join(base, 'bin-with-rg');
    const other = join(base, 'bin-without');
    mkdirSync(bin);
    mkdirSync(other);
    writeFileSync(join(bin, 'rg'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(other, 'rg-not'), '#!/bin/sh\n', { mode: 0o755 });
    const notRunnable = join(other, 'rg');
    writeFileSync(notRunnable, 'not executable', { mode: 0o644 });
    expect(findRipgrep([], { PATH: [other, bin].join(delimiter) }, 'linux')).toBe(join(bin, 'rg'));
    expect(findRipgrep([join(other, 'rg-not')], { PATH: bin }, 'linux')).toBe(join(other, 'rg-not'));
    expect(findRipgrep([join(other, 'missing')], { PATH: other }, 'linux')).toBeUndefined();
    expect(findRipgrep([], {}, 'linux')).toBeUndefined();
  });

  it('stops a regular expression that backtracks without end after its time budget, saying so', async () => {
    const dir = join(base, 'redos');
    mkdirSync(dir);
    writeFileSync(join(dir, 'x.txt'), `${'a'.repeat(40)}!\n`);
    const w = new NodeWorkspace({ folder: dir, configDir: config() });
    await refused(w.search({ query: '(a+)+$', regex: true, maxMatches: 5 }), /took longer than 5 s/);
    // Held for the budget, not for ever: the next search works.
    expect((await w.search({ query: 'a+!', regex: true, maxMatches: 5 })).matches).toHaveLength(1);
  });

  it('shows git diff and writes files', async () => {
    expect(await ws.gitDiff(false)).toBe('');
    await ws.writeFile('src/a.ts', 'export const a = 2;\n');
    const diff = await ws.gitDiff(false);
    expect(diff).toContain('-export const a = 1;');
    expect(diff).toContain('+export const a = 2;');
    await ws.writeFile('src/new/dir/c.ts', 'c\n');
    expect(readFileSync(join(repo, 'src/new/dir/c.ts'), 'utf8')).toBe('c\n');
    expect(await ws.readIfExists('src/none.ts')).toBeUndefined();
  });

  it('says the CLI has no diagnostics', async () => {
    expect(await ws.diagnostics()).toMatchObject({ supported: false });
  });
});

describe('commands', () => {
  it('runs in the folder with its exit code and output, without DeskRelay variables or keys', async () => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: '/x', OPENAI_API_KEY: 'sk-1', MY_KEY_ENV: 'k', GITHUB_TOKEN: 'g', KEEP: 'yes' };
    const w = new NodeWorkspace({ folder: repo, configDir: config(), env, keyNames: () => ['MY_KEY_ENV'] });
    const r = await w.runCommand('pwd; env | sort; echo oops >&2; exit 3', { signal: new AbortController().signal, timeoutMs: 10_000, maxOutputBytes: 64 * 1024 });
    expect(r.exitCode).toBe(3);
    expect(r.output).toContain(repo);
    expect(r.output).toContain('KEEP=yes');
    expect(r.output).toContain('oops');
    for (const gone of ['DESKRELAY_CONFIG_DIR', 'OPENAI_API_KEY', 'MY_KEY_ENV', 'GITHUB_TOKEN']) expect(r.output).not.toContain(gone);
    expect(commandEnv({ ANTHROPIC_API_KEY: 'a', AWS_SECRET_ACCESS_KEY: 'b', NPM_TOKEN: 'c', EDITOR: 'vi' })).toEqual({ EDITOR: 'vi' });
  });

  it('keeps the end of long output and says how much was dropped', async () => {
    const r = await ws.runCommand('seq 1 20000', { signal: new AbortController().signal, timeoutMs: 10_000, maxOutputBytes: 1000 });
    expect(r.output.endsWith('20000\n')).toBe(true);
    expect(Buffer.byteLength(r.output)).toBe(1000);
    expect(r.droppedBytes).toBeGreaterThan(100_000);
  });

  it('hands every byte of output to a watcher as it comes (what the desk\'s terminal shows), the cap applying to the result only', async () => {
    const seen: Buffer[] = [];
    const r = await ws.runCommand('seq 1 20000; echo done >&2', {
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      maxOutputBytes: 1000,
      onOutput: (chunk) => seen.push(chunk),
    });
    const all = Buffer.concat(seen).toString('utf8');
    expect(all).toBe(`${Array.from({ length: 20000 }, (_, i) => i + 1).join('\n')}\ndone\n`);
    expect(all.endsWith(r.output)).toBe(true);
    expect(Buffer.byteLength(r.output)).toBe(1000);
  });

  it('a timeout or a stop kills the whole process group, background children included', async () => {
    const pidOf = (file: string) => Number(readFileSync(file, 'utf8').trim());
    const timedFile = join(base, 'bg-timed.pid');
    const timed = await ws.runCommand(`sleep 60 & echo $! > ${timedFile}; wait`, { signal: new AbortController().signal, timeoutMs: 500, maxOutputBytes: 1000 });
    expect(timed.timedOut).toBe(true);
    // Signals are delivered when the killed process next runs: gone within moments, not at once.
    await waitFor(() => !alive(pidOf(timedFile)));
    const stopFile = join(base, 'bg-stop.pid');
    const stop = new AbortController();
    const running = ws.runCommand(`sleep 60 & echo $! > ${stopFile}.tmp; mv ${stopFile}.tmp ${stopFile}; wait`, { signal: stop.signal, timeoutMs: 60_000, maxOutputBytes: 1000 });
    await waitFor(() => alive(pidOf(stopFile)));
    stop.abort();
    const r = await running;
    expect(r.stopped).toBe(true);
    await waitFor(() => !alive(pidOf(stopFile)));
  });
});


async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if (check()) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('timed out waiting');
}
