// What an agent's command inherits: the user's environment minus anything that looks like a
// credential (by name or by a password in a URL), DeskRelay's own variables and the provider keys.
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandEnv } from '../../server/src/agent/commandEnv';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';

const folder = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-env-')));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const essentials = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/home/u', LANG: 'C.UTF-8', TERM: 'xterm-256color' };

describe('the command environment', () => {
  it('drops the issue\'s examples, keeps PATH, HOME, LANG and TERM', () => {
    const env = commandEnv({
      ...essentials,
      PGPASSWORD: 'pw',
      OPENAI_API_KEY_2: 'sk-2',
      GITHUB_PAT: 'ghp',
      MY_SECRETS: 's',
      DATABASE_URL: 'postgres://u:pw@db.example.com/app',
    });
    expect(env).toEqual(essentials);
  });

  it('drops every name containing a credential word, any case, anywhere', () => {
    const words = ['KEY', 'TOKEN', 'SECRET', 'PASSWORD', 'PASSWD', 'PASS', 'CREDENTIAL', 'AUTH', 'PAT', 'PRIVATE', 'SESSION', 'COOKIE'];
    const source: NodeJS.ProcessEnv = { ...essentials };
    for (const w of words) {
      source[`X${w.toLowerCase()}Y`] = 'v';
      source[`${w}_Z`] = 'v';
      source[`A_${w}`] = 'v';
    }
    expect(commandEnv(source)).toEqual(essentials);
  });

  it('keeps PATH-like lists (a trailing PATH is not a PAT) and PATHEXT, but not a secret word before PATH', () => {
    const kept = { Path: 'C:\\bin', PATHEXT: '.COM;.EXE', MANPATH: '/m', LD_LIBRARY_PATH: '/l', PYTHONPATH: '/p', PSModulePath: 'x', GOPATH: '/g' };
    expect(commandEnv({ ...kept, SECRET_PATH: '/s', PATPATH: 'x', GITHUB_PATS: 'x' })).toEqual(kept);
  });

  it('drops any variable whose value is a URL with a password, and only those', () => {
    const env = commandEnv({
      ...essentials,
      REDIS: 'redis://:pw@cache:6379/0',
      HTTPS_PROXY: 'http://me:p@ss@proxy:3128',
      LIST: 'a,amqp://u:pw@q/vh',
      PLAIN_URL: 'https://example.com:8443/a@b',
      USER_ONLY: 'ssh://git@github.com/x.git',
    });
    expect(env).toEqual({ ...essentials, PLAIN_URL: 'https://example.com:8443/a@b', USER_ONLY: 'ssh://git@github.com/x.git' });
  });

  it('pass keeps names anyway, drop drops more; DeskRelay\'s variables and provider keys stay dropped', () => {
    const env = commandEnv(
      { ...essentials, SSH_AUTH_SOCK: '/tmp/agent', DATABASE_URL: 'postgres://u:pw@h/d', EDITOR: 'vi', DESKRELAY_CONFIG_DIR: '/c', OPENAI_API_KEY: 'sk', MY_PROVIDER_KEY: 'k', NGROK_AUTHTOKEN: 't' },
      { keyNames: ['MY_PROVIDER_KEY'], pass: ['ssh_auth_sock', 'DATABASE_URL', 'DESKRELAY_CONFIG_DIR', 'OPENAI_API_KEY', 'MY_PROVIDER_KEY', 'NGROK_AUTHTOKEN'], drop: ['editor'] },
    );
    expect(env).toEqual({ ...essentials, SSH_AUTH_SOCK: '/tmp/agent', DATABASE_URL: 'postgres://u:pw@h/d' });
  });

  it('a command run by the agent sees none of it', async () => {
    const ws = new NodeWorkspace({
      folder,
      configDir: join(folder, '.cfg'),
      env: { ...essentials, PGPASSWORD: 'pw', GITHUB_PAT: 'ghp', DATABASE_URL: 'postgres://u:pw@db/app', KEEP_ME: 'yes', DROP_ME: 'x', PASS_ME_TOKEN: 'y' },
      envRules: () => ({ pass: ['PASS_ME_TOKEN'], drop: ['DROP_ME'] }),
    });
    const r = await ws.runCommand('env', { signal: new AbortController().signal, timeoutMs: 10_000, maxOutputBytes: 64 * 1024 });
    const names = r.output.split('\n').map((l) => l.split('=')[0]);
    for (const gone of ['PGPASSWORD', 'GITHUB_PAT', 'DATABASE_URL', 'DROP_ME']) expect(names).not.toContain(gone);
    for (const kept of ['PATH', 'HOME', 'LANG', 'TERM', 'KEEP_ME', 'PASS_ME_TOKEN']) expect(names).toContain(kept);
  });
});
