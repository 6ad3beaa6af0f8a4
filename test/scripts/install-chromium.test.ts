// scripts/install-chromium.mjs, run as `npm test` runs it, on a machine that plays one without
// Chromium: DESKRELAY_CHROMIUM names a path that does not exist, and a stand-in apt-get on PATH
// records what it was asked (the real package is never removed or installed here).
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = resolve(__dirname, '../../scripts/install-chromium.mjs');
const isRoot = process.getuid?.() === 0;
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'deskrelay-chromium-'));
  chmodSync(dir, 0o755);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function run(env: Record<string, string>, opts: { uid?: number } = {}) {
  // Played as another user, the script runs from a copy in the test's own dir (mode 0755): a
  // checkout inside a mode-0700 directory (root's home) is not readable by `nobody`. The script
  // needs nothing beside itself.
  let path = script;
  if (opts.uid !== undefined) {
    path = join(dir, 'install-chromium.mjs');
    copyFileSync(script, path);
    chmodSync(path, 0o644);
  }
  const r = spawnSync(process.execPath, [path], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    encoding: 'utf8',
    timeout: 20_000,
    ...(opts.uid !== undefined ? { uid: opts.uid, gid: opts.uid } : {}),
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A stand-in apt-get: logs `DEBIAN_FRONTEND args`, and `install` creates the Chromium file. */
function fakeApt(exitCode = 0): { bin: string; log: string } {
  const bin = join(dir, 'bin');
  const log = join(dir, 'apt.log');
  spawnSync('mkdir', ['-p', bin]);
  writeFileSync(
    join(bin, 'apt-get'),
    `#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> "${log}"\n[ "$1" = install ] && [ ${exitCode} = 0 ] && touch "$DESKRELAY_CHROMIUM"\nexit ${exitCode}\n`,
  );
  chmodSync(join(bin, 'apt-get'), 0o755);
  return { bin, log };
}

describe('npm test provisions Chromium (scripts/install-chromium.mjs)', () => {
  it('is part of npm test, before vitest', () => {
    const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8'));
    expect(pkg.scripts.test).toBe('node scripts/test.mjs');
    // scripts/test.mjs lists its phases in the order they run.
    const test = readFileSync(resolve(__dirname, '../../scripts/test.mjs'), 'utf8');
    expect(test).toContain("[node, 'scripts/install-chromium.mjs']");
    expect(test.indexOf('install-chromium')).toBeLessThan(test.indexOf("'vitest', [node, 'node_modules/vitest/vitest.mjs', 'run']"));
  });

  it('does nothing when Chromium is there', () => {
    const apt = fakeApt();
    const present = join(dir, 'chromium');
    writeFileSync(present, '');
    const r = run({ DESKRELAY_CHROMIUM: present, PATH: `${apt.bin}:${process.env.PATH}` });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`Chromium found at ${present}`);
    expect(existsSync(apt.log)).toBe(false);
  });

  it('as root, missing: apt-get update, then apt-get install -y chromium, non-interactive', { skip: !isRoot }, () => {
    const apt = fakeApt();
    const missing = join(dir, 'usr-bin-chromium');
    const r = run({ DESKRELAY_CHROMIUM: missing, PATH: `${apt.bin}:${process.env.PATH}` });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const calls = readFileSync(apt.log, 'utf8').trim().split('\n');
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatch(/^noninteractive update\b/);
    expect(calls[1]).toMatch(/^noninteractive install -y .*\bchromium$/);
    expect(existsSync(missing)).toBe(true);
    expect(r.stdout).toContain('installing Debian\'s chromium');
  });

  it('as root, missing, apt-get failing: exits 1 and says which command failed', { skip: !isRoot }, () => {
    const apt = fakeApt(100);
    const r = run({ DESKRELAY_CHROMIUM: join(dir, 'none'), PATH: `${apt.bin}:${process.env.PATH}` });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/`apt-get update -qq` failed \(exit 100\)/);
  });

  it('not root, missing: stops at once with one line naming the command to run', () => {
    const apt = fakeApt();
    const missing = join(dir, 'usr-bin-chromium');
    const started = Date.now();
    // As root, play an ordinary user (nobody); otherwise we already are one.
    const r = run({ DESKRELAY_CHROMIUM: missing, PATH: `${apt.bin}:${process.env.PATH}` }, isRoot ? { uid: 65534 } : {});
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`Chromium not found at ${missing}`);
    expect(lines[0]).toContain('`sudo apt-get update && sudo apt-get install -y chromium`');
    expect(existsSync(apt.log)).toBe(false);
  });
});
