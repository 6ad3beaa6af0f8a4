// Starting code-server for the e2e launcher and the activation measurement: a fresh user-data
// dir with quiet settings, no auth, on a free loopback port; stopped through the cleanup given.
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { entryScript } from './install-code-server.mjs';

export const CHROMIUM = process.env.DESKRELAY_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'];

export function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(what, fn, timeoutMs, intervalMs = 250) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(intervalMs);
  }
}

export function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}

/** `onCleanup(fn)` receives the function that stops it; `log` gets one line when it has. */
/** `untrusted`: workspace trust on and the folder never trusted (VS Code's restricted mode). */
export async function startCodeServer(tmp, env, { onCleanup, log, untrusted = false }) {
  const port = await freePort();
  const ud = join(tmp, 'ud');
  mkdirSync(join(ud, 'User'), { recursive: true });
  mkdirSync(join(tmp, 'ext'), { recursive: true });
  writeFileSync(
    join(ud, 'User', 'settings.json'),
    JSON.stringify(
      {
        'security.workspace.trust.enabled': untrusted,
        ...(untrusted ? { 'security.workspace.trust.startupPrompt': 'never', 'security.workspace.trust.emptyWindow': false } : {}),
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'update.mode': 'none',
        'telemetry.telemetryLevel': 'off',
        // VS Code's proxy support replaces an https Agent that extension code passes in; the tunnel
        // tests hand the health probe an Agent that reaches the stand-in cloudflared's edge.
        'http.proxySupport': 'off',
      },
      null,
      2,
    ),
  );
  writeFileSync(join(tmp, 'code-server.yaml'), 'auth: none\ncert: false\n');
  const logFile = join(tmp, 'code-server.log');
  const fd = openSync(logFile, 'a');
  const child = spawn(
    process.execPath,
    [
      entryScript(),
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--config', join(tmp, 'code-server.yaml'),
      '--user-data-dir', ud,
      '--extensions-dir', join(tmp, 'ext'),
      '--disable-telemetry',
      '--disable-update-check',
      ...(untrusted ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override',
      // The suite's stand-in chat models (test/e2e/vscode/lm-standin) use the chatProvider proposal.
      '--enable-proposed-api', 'deskrelay-test.lm-standin',
    ],
    { cwd: tmp, env, detached: true, stdio: ['ignore', fd, fd] },
  );
  let exited = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
  });
  onCleanup(async () => {
    if (exited) return;
    killGroup(child, 'SIGTERM');
    const until = Date.now() + 5000;
    while (!exited && Date.now() < until) await sleep(100);
    if (!exited) killGroup(child, 'SIGKILL');
    log('code-server stopped');
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(
    'code-server to answer /healthz',
    async () => {
      if (exited) throw new Error(`code-server exited (${JSON.stringify(exited)}):\n${tail(logFile)}`);
      try {
        return (await fetch(`${base}/healthz`)).ok;
      } catch {
        return false;
      }
    },
    30_000,
  );
  return { port, base, logFile, ud, isAlive: () => !exited };
}

export function tail(file, lines = 40) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
