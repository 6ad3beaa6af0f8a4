/** `deskrelay doctor` checks that the push key file (push-vapid.json, the Web Push private key) is the user's alone, run as a user runs it: the built CLI. */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, expect, it } from 'vitest';

const CLI = resolve(__dirname, '../../dist/cli.js');

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run "node scripts/build.mjs" first');
});

const doctor = (dir: string) =>
  spawnSync(process.execPath, [CLI, 'doctor', '--cloudflared', join(dir, 'none')], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: '' },
    encoding: 'utf8',
  });

it.skipIf(process.platform === 'win32')('says the push key file is fine at 0600 and fails it, with the fix, when others can read it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-doctor-'));
  expect(doctor(dir).stdout).not.toContain('push key file');
  const file = join(dir, 'push-vapid.json');
  writeFileSync(file, '{}', { mode: 0o600 });
  expect(doctor(dir).stdout).toContain(`[ok  ] push key file: ${file} has mode 600 (yours alone)`);
  chmodSync(file, 0o640);
  const failed = doctor(dir);
  expect(failed.stdout).toContain(`[FAIL] push key file: ${file} has mode 640, readable by others; run: chmod 600 ${file}`);
  expect(failed.status).toBe(1);
});
