/** CONTRACT §1-2 and SPEC §5.7: the token's form, its file, and rotation across restarts. */
import { mkdtempSync, readFileSync, readdirSync, statSync, existsSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configDir } from '../../server/src/session/paths';
import { RelayServer } from '../../server/src/session/relay';
import { bearer, send } from '../helpers/http';
import { startRelay } from '../helpers/relay';

describe('the token file', () => {
  it('holds a dr_ + 43 base64url token and one newline, mode 0600 in a 0700 dir', async () => {
    const t = await startRelay();
    try {
      const path = join(t.dir, 'token');
      expect(readFileSync(path, 'utf8')).toBe(`${t.token}\n`);
      expect(t.token).toMatch(/^dr_[A-Za-z0-9_-]{43}$/);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(statSync(t.dir).mode & 0o777).toBe(0o700);
      // Written through a temp file and a rename: nothing else is left behind.
      // Beside it the desk token (issue 36), as private and as strong, and nothing else.
      expect(readdirSync(t.dir).sort()).toEqual(['desk-token', 'token']);
      const desk = readFileSync(join(t.dir, 'desk-token'), 'utf8');
      expect(desk).toMatch(/^dr_[A-Za-z0-9_-]{43}\n$/);
      expect(desk).not.toBe(`${t.token}\n`);
      expect(statSync(join(t.dir, 'desk-token')).mode & 0o777).toBe(0o600);
    } finally {
      await t.close();
    }
  });

  it('tightens an existing config dir to 0700', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'deskrelay-perm-')), 'deskrelay');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const t = await startRelay({ configDir: dir });
    try {
      expect(statSync(dir).mode & 0o777).toBe(0o700);
    } finally {
      await t.close();
    }
  });

  it('is removed on a clean stop', async () => {
    const t = await startRelay();
    const path = join(t.dir, 'token');
    expect(existsSync(path)).toBe(true);
    await t.relay.stop();
    expect(existsSync(path)).toBe(false);
    await t.close();
  });
});

describe('rotation', () => {
  it('makes a new token on every start; the old one stops working at once', async () => {
    const t = await startRelay();
    try {
      const first = t.token;
      expect((await send(t.url, '/v1/remote/info', { headers: bearer(first) })).status).toBe(200);
      await t.relay.stop();
      const again = await t.relay.start();
      expect(again.token).not.toBe(first);
      expect(readFileSync(join(t.dir, 'token'), 'utf8').trim()).toBe(again.token);
      const old = await send(again.url, '/v1/remote/info', { headers: bearer(first) });
      expect(old.status).toBe(401);
      expect(old.json.error.code).toBe('auth.invalid_token');
      expect((await send(again.url, '/v1/remote/info', { headers: bearer(again.token) })).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('never repeats a token', async () => {
    const t = await startRelay();
    const seen = new Set<string>();
    try {
      for (let i = 0; i < 20; i++) {
        seen.add(t.token);
        await t.relay.stop();
        await t.relay.start();
      }
      expect(seen.size).toBe(20);
    } finally {
      await t.close();
    }
  });
});

describe('start-up failures', () => {
  it('reports a port in use by naming it, and leaves no token file behind', async () => {
    const a = await startRelay();
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-busy-'));
    const b = new RelayServer({ ...a.relay.options, port: a.relay.port!, configDir: dir });
    try {
      await expect(b.start()).rejects.toMatchObject({ code: 'EADDRINUSE', message: expect.stringContaining(`Port ${a.relay.port}`) });
      expect(existsSync(join(dir, 'token'))).toBe(false);
      expect(b.running).toBe(false);
    } finally {
      await a.close();
    }
  });
});

describe('the config dir', () => {
  it('follows DESKRELAY_CONFIG_DIR, then the platform', () => {
    expect(configDir({ DESKRELAY_CONFIG_DIR: '/x/y' }, 'linux')).toBe('/x/y');
    expect(configDir({ XDG_CONFIG_HOME: '/cfg' }, 'linux')).toBe('/cfg/deskrelay');
    expect(configDir({}, 'linux')).toMatch(/\/\.config\/deskrelay$/);
    expect(configDir({}, 'darwin')).toMatch(/\/Library\/Application Support\/deskrelay$/);
    expect(configDir({ APPDATA: 'C:\\Users\\me\\AppData\\Roaming' }, 'win32')).toMatch(/AppData.Roaming.deskrelay$/);
  });
});
