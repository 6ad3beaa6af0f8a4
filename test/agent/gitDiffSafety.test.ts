// git_diff asks nothing, so no git it runs may start a program named by the repository's,
// the user's or the system's git config or attributes: each vector below names a program that
// would leave a marker file, and after git_diff (unstaged and staged) there must be none. Its
// output never shows a protected file either. (No pager test: git pages only into a terminal, and
// its output here is always a pipe; --no-pager and GIT_PAGER=cat say so twice more.)
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import { filterDiff } from '../../server/src/agent/hosts/node/diffSections';
import { gitProject } from './support';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A 401 server: git over http asks its credential helpers when it gets one. */
let server: Server;
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="x"', 'Content-Length': '0' }).end();
  });
  server.on('error', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

interface Setup {
  repo: string;
  base: string;
  /** A shell command line that leaves the marker `name`, then copies its input (a filter) or fails. */
  marker: (name: string, then?: 'cat' | 'exit 1') => string;
  config: (key: string, value: string) => void;
  env: NodeJS.ProcessEnv;
}

/**
 * A repository with `a.txt` committed ("one"), a change staged ("two") and another not ("three"),
 * `files` committed beside it. Set up before any vector is configured: a test's own git would run it.
 */
function project(files: Record<string, string> = {}): Setup & { markers: string } {
  const { base, repo } = gitProject('deskrelay-gitvec-', { 'a.txt': 'one\n', ...files });
  made.push(base);
  const markers = join(base, 'markers');
  mkdirSync(markers);
  writeFileSync(join(repo, 'a.txt'), 'two\n');
  execFileSync('git', ['add', 'a.txt'], { cwd: repo });
  writeFileSync(join(repo, 'a.txt'), 'three\n');
  const home = join(base, 'home');
  mkdirSync(home);
  return {
    base,
    repo,
    markers,
    marker: (name, then = 'cat') => `sh -c 'touch ${markers}/${name}; ${then}' --`,
    config: (key, value) => execFileSync('git', ['config', key, value], { cwd: repo }),
    env: { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: join(home, '.config') },
  };
}

async function diffLeavesNoMarker(s: Setup & { markers: string }, expectDiff = true): Promise<void> {
  const ws = new NodeWorkspace({ folder: s.repo, configDir: join(s.base, 'cfg'), env: s.env });
  const unstaged = await ws.gitDiff(false).catch((e: Error) => `failed: ${e.message}`);
  const staged = await ws.gitDiff(true).catch((e: Error) => `failed: ${e.message}`);
  expect(readdirSync(s.markers)).toEqual([]);
  if (expectDiff) {
    expect(unstaged).toContain('+three');
    expect(staged).toContain('+two');
  }
}

describe('git_diff runs no program git config or attributes name', () => {
  it('a filter\'s clean command (repository config)', async () => {
    const s = project({ '.gitattributes': '*.txt filter=x\n' });
    s.config('filter.x.clean', s.marker('clean'));
    s.config('filter.x.smudge', s.marker('smudge'));
    await diffLeavesNoMarker(s);
  });

  it('a filter\'s long-running process, required', async () => {
    const s = project({ '.gitattributes': '*.txt filter=x\n' });
    s.config('filter.x.process', s.marker('process'));
    s.config('filter.x.required', 'true');
    await diffLeavesNoMarker(s);
  });

  it('a filter from the user\'s global config, named by the global attributes file', async () => {
    const s = project();
    writeFileSync(join(s.env.HOME!, '.gitconfig'), `[filter "g"]\n\tclean = "${s.marker('global-clean')}"\n[core]\n\tattributesFile = ${join(s.env.HOME!, 'attrs')}\n`);
    writeFileSync(join(s.env.HOME!, 'attrs'), '*.txt filter=g\n');
    await diffLeavesNoMarker(s);
  });

  it('a filter from the system config (GIT_CONFIG_SYSTEM)', async () => {
    const s = project({ '.gitattributes': '*.txt filter=sys\n' });
    const system = join(s.base, 'gitconfig-system');
    writeFileSync(system, `[filter "sys"]\n\tclean = "${s.marker('system-clean')}"\n`);
    s.env.GIT_CONFIG_SYSTEM = system;
    await diffLeavesNoMarker(s);
  });

  it('a textconv', async () => {
    const s = project({ '.gitattributes': '*.txt diff=t\n' });
    s.config('diff.t.textconv', s.marker('textconv'));
    await diffLeavesNoMarker(s);
  });

  it('an external diff: diff.external, a diff driver\'s command, GIT_EXTERNAL_DIFF', async () => {
    const s = project({ '.gitattributes': '*.txt diff=d\n' });
    s.config('diff.external', s.marker('external'));
    s.config('diff.d.command', s.marker('driver-command'));
    s.env.GIT_EXTERNAL_DIFF = s.marker('env-external');
    await diffLeavesNoMarker(s);
  });

  it('an fsmonitor hook', async () => {
    const s = project();
    const hook = join(s.base, 'fsmonitor.sh');
    writeFileSync(hook, `#!/bin/sh\ntouch ${s.markers}/fsmonitor\n`);
    chmodSync(hook, 0o755);
    s.config('core.fsmonitor', hook);
    await diffLeavesNoMarker(s);
  });

  it('hooks, in .git/hooks and in core.hooksPath, with files whose index entry is stale', async () => {
    const s = project({ 'b.txt': 'b\n' });
    const hooks = [join(s.repo, '.git', 'hooks'), join(s.base, 'hookdir')];
    for (const dir of hooks) {
      mkdirSync(dir, { recursive: true });
      for (const name of ['post-index-change', 'reference-transaction', 'pre-auto-gc', 'post-checkout', 'fsmonitor-watchman']) {
        writeFileSync(join(dir, name), `#!/bin/sh\ntouch ${s.markers}/hook-${name}\n`);
        chmodSync(join(dir, name), 0o755);
      }
    }
    // Same content, new times: git would refresh (and write) the index for it.
    utimesSync(join(s.repo, 'b.txt'), new Date(), new Date(Date.now() + 5000));
    await diffLeavesNoMarker(s);
    s.config('core.hooksPath', hooks[1]!);
    utimesSync(join(s.repo, 'b.txt'), new Date(), new Date(Date.now() + 9000));
    await diffLeavesNoMarker(s);
  });

  it('a submodule\'s own filter (git looks into a submodule for changes inside it)', async () => {
    const s = project();
    const sub = join(s.base, 'sub');
    mkdirSync(sub);
    writeFileSync(join(sub, '.gitattributes'), '*.txt filter=s\n');
    writeFileSync(join(sub, 's.txt'), 'one\n');
    const git = (cwd: string, ...a: string[]) => execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', '-c', 'protocol.file.allow=always', ...a], { cwd, stdio: 'ignore' });
    git(sub, 'init', '-q');
    git(sub, 'add', '.');
    git(sub, 'commit', '-qm', 'sub');
    git(s.repo, 'submodule', '-q', 'add', sub, 'sub');
    git(s.repo, 'commit', '-qm', 'with sub', '--', '.gitmodules', 'sub');
    execFileSync('git', ['config', 'filter.s.clean', s.marker('submodule-clean')], { cwd: join(s.repo, 'sub') });
    writeFileSync(join(s.repo, 'sub', 's.txt'), 'two\n');
    await diffLeavesNoMarker(s);
  });

  /** A partial clone whose a.txt blob is missing: git fetches it from the promisor remote on a diff. */
  function partialClone(): Setup & { markers: string } {
    const s = project();
    execFileSync('git', ['config', 'uploadpack.allowFilter', 'true'], { cwd: s.repo });
    const clone = join(s.base, 'clone');
    execFileSync('git', ['clone', '-q', '--filter=blob:none', '--no-checkout', `file://${s.repo}`, clone], { stdio: 'ignore' });
    execFileSync('git', ['read-tree', 'HEAD'], { cwd: clone });
    writeFileSync(join(clone, 'a.txt'), 'three\n');
    return { ...s, repo: clone, config: (key, value) => execFileSync('git', ['config', key, value], { cwd: clone }) };
  }

  it('a credential helper (a lazy fetch in a partial clone, over http)', async () => {
    const s = partialClone();
    s.config('remote.origin.url', `http://127.0.0.1:${(server.address() as AddressInfo).port}/repo.git`);
    s.config('credential.helper', `!${s.marker('credential', 'exit 1')}`);
    await diffLeavesNoMarker(s, false);
  });

  it('core.sshCommand (a lazy fetch in a partial clone, over ssh)', async () => {
    const s = partialClone();
    s.config('remote.origin.url', 'ssh://example.invalid/repo.git');
    s.config('core.sshCommand', s.marker('ssh', 'exit 1'));
    await diffLeavesNoMarker(s, false);
  });

  it('a remote\'s uploadpack (a lazy fetch in a partial clone, from a local path)', async () => {
    const s = partialClone();
    s.config('remote.origin.uploadpack', s.marker('uploadpack', 'exit 1'));
    await diffLeavesNoMarker(s, false);
  });
});

describe('git_diff shows no protected file', () => {
  it('leaves out denied files whatever their case, denyPaths and DeskRelay\'s own config, saying how many', async () => {
    const files = { 'server.PEM': 'pem-1\n', 'sub/.env': 'env-1\n', 'secrets/x.txt': 'denied-1\n', 'cfg/config.json': 'config-1\n', 'ok dir/b "q".txt': 'quoted-1\n', 'ünï.txt': 'unicode-1\n' };
    const { base, repo } = gitProject('deskrelay-gitdeny-', { 'a.txt': 'one\n', ...files });
    made.push(base);
    for (const [path, text] of Object.entries(files)) writeFileSync(join(repo, path), text.replace('1', '2'));
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    const ws = new NodeWorkspace({ folder: repo, configDir: join(repo, 'cfg'), denyPaths: ['secrets/'], env: { PATH: process.env.PATH, HOME: base } });
    const diff = await ws.gitDiff(false);
    expect(diff).toContain('+two');
    expect(diff).toContain('+quoted-2');
    expect(diff).toContain('+unicode-2');
    for (const secret of ['pem-', 'env-', 'denied-', 'config-', 'server.PEM', '.env', 'secrets/', 'config.json']) expect(diff).not.toContain(secret);
    expect(diff).toMatch(/4 changed files are not shown/);
  });
});

it('a conflict\'s sections (diff --cc, * Unmerged path) and a header it cannot read are left out too', () => {
  const conflict = 'diff --cc .env\nindex f2ad6c7,6178079..0000000\n--- a/.env\n+++ b/.env\n@@@ -1,1 -1,1 +1,5 @@@\n++<<<<<<< HEAD\n +c\n';
  const ok = 'diff --git "a/ok \\303\\274.txt" "b/ok \\303\\274.txt"\n--- "a/ok \\303\\274.txt"\n+++ "b/ok \\303\\274.txt"\n@@ -1 +1 @@\n-x\n+y\n';
  const odd = 'diff --git a/x b/y z\n+hidden\n';
  const keep = (path: string) => path !== '.env';
  expect(filterDiff(`${conflict}${ok}${odd}`, keep)).toEqual({ text: ok, left: 2 });
  expect(filterDiff('* Unmerged path .env\n* Unmerged path "ok \\303\\274.txt"\n', (p) => p === 'ok ü.txt')).toEqual({ text: '* Unmerged path "ok \\303\\274.txt"\n', left: 1 });
});

// A folder that is not a repository still answers with git's own words.
it('outside a repository, git_diff fails with git\'s message', async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-norepo-')));
  made.push(dir);
  const ws = new NodeWorkspace({ folder: dir, configDir: join(dir, 'cfg'), env: { PATH: process.env.PATH, HOME: dir, GIT_CEILING_DIRECTORIES: tmpdir() } });
  await expect(ws.gitDiff(false)).rejects.toThrow(/git diff failed/);
});
