import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findCloudflared, TunnelError } from '../../server/src/tunnel';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-find-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function executable(rel: string, body = '#!/bin/sh\nexec cloudflared "$@"\n'): string {
  const file = path.join(dir, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, body);
  chmodSync(file, 0o755);
  return file;
}

function thrown(fn: () => unknown): TunnelError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TunnelError);
    return err as TunnelError;
  }
  throw new Error('expected a TunnelError');
}

const empty = path.join('/nonexistent-deskrelay', 'pkg-bin');

describe('findCloudflared', () => {
  it('uses an explicit path as given, even a wrapper script, before everything else', () => {
    const wrapper = executable('my tools/cloudflared-wrapper.sh');
    const onPath = executable('bin/cloudflared');
    expect(findCloudflared({ explicitPath: wrapper, env: { PATH: path.dirname(onPath), CLOUDFLARED_BIN: onPath }, packageBinDir: empty })).toBe(wrapper);
  });

  it('names a missing explicit path and never falls back to another binary', () => {
    const onPath = executable('bin/cloudflared');
    const missing = path.join(dir, 'nope', 'cloudflared');
    const err = thrown(() => findCloudflared({ explicitPath: missing, env: { PATH: path.dirname(onPath) }, packageBinDir: empty }));
    expect(err.message).toContain(missing);
    expect(err.message).toMatch(/not found/);
  });

  it('refuses an explicit path that is not executable', () => {
    const file = path.join(dir, 'cloudflared');
    writeFileSync(file, 'not a program');
    expect(thrown(() => findCloudflared({ explicitPath: file, env: {}, packageBinDir: empty })).message).toContain('not executable');
  });

  it('then CLOUDFLARED_BIN, naming it when it points nowhere', () => {
    const fromEnv = executable('env/cloudflared');
    const onPath = executable('bin/cloudflared');
    expect(findCloudflared({ env: { CLOUDFLARED_BIN: fromEnv, PATH: path.dirname(onPath) }, packageBinDir: empty })).toBe(fromEnv);
    const err = thrown(() => findCloudflared({ env: { CLOUDFLARED_BIN: '/gone/cloudflared', PATH: path.dirname(onPath) }, packageBinDir: empty }));
    expect(err.message).toContain('/gone/cloudflared');
    expect(err.message).toContain('CLOUDFLARED_BIN');
  });

  it('then PATH, skipping directories without an executable cloudflared', () => {
    const first = path.join(dir, 'first');
    mkdirSync(first);
    writeFileSync(path.join(first, 'cloudflared'), 'no exec bit');
    const onPath = executable('second/cloudflared');
    expect(findCloudflared({ env: { PATH: [first, path.join(dir, 'missing'), path.dirname(onPath)].join(':') }, packageBinDir: empty })).toBe(onPath);
  });

  it("then the cloudflared package's install folder", () => {
    const installed = executable('pkg/bin/cloudflared');
    expect(findCloudflared({ env: { PATH: '' }, packageBinDir: path.dirname(installed) })).toBe(installed);
  });

  it('finds nothing when the package never downloaded its binary (install script disabled here)', () => {
    // The default package folder is node_modules/cloudflared/bin, empty in this checkout.
    const err = thrown(() => findCloudflared({ env: { PATH: '' } }));
    expect(err.message).toContain(path.join('node_modules', 'cloudflared', 'bin'));
  });

  it('nothing found: says so with install instructions for every OS', () => {
    const err = thrown(() => findCloudflared({ env: { PATH: path.join(dir, 'empty') }, packageBinDir: empty }));
    expect(err.message).toMatch(/cloudflared was not found/);
    expect(err.message).toContain('brew install cloudflared');
    expect(err.message).toContain('winget install --id Cloudflare.cloudflared');
    expect(err.message).toMatch(/apt repository/);
    expect(err.message).toContain('https://github.com/cloudflare/cloudflared/releases');
    expect(err.message).toContain('deskrelay.cloudflaredPath');
  });

  it('on Windows tries PATHEXT names on Path', () => {
    const exe = executable('win/cloudflared.exe');
    expect(findCloudflared({ platform: 'win32', env: { Path: path.dirname(exe), PATHEXT: '.COM;.EXE' }, packageBinDir: empty })).toBe(exe);
  });
});
