// A tunnel agent (cloudflared, …) must never outlive us, even when we die without running any
// cleanup (SIGKILL, a crash of the editor's extension host). Node cannot set PR_SET_PDEATHSIG and Windows has no
// equivalent short of job objects, so the agent is started by a tiny Node watchdog whose stdin
// is a pipe from us: the OS closes that pipe when our process ends, however it ends, and the
// watchdog then stops the agent (SIGTERM, SIGKILL after a grace period) and exits. Orderly
// stops use the same path: we end the pipe. The agent writes straight into our stdout/stderr
// pipes (inherited through the watchdog), so nothing is relayed or buffered; the watchdog
// reports the agent's pid and exit on fd 3 as JSON lines.
//
// The source is a string run with `node -e` because the server is bundled into one file per
// entry point (dist/cli.js, dist/extension.js): a separate .js file would not ship.

export interface WatchdogConfig {
  binary: string;
  args: string[];
  /** Milliseconds between SIGTERM and SIGKILL. */
  graceMs: number;
  /** Windows wrapper scripts (.cmd/.bat) only start through the shell. */
  shell: boolean;
  /** Variables the watchdog needed changed for itself, restored for the agent (null: unset). */
  restoreEnv: Record<string, string | null>;
}

export type WatchdogMessage =
  | { type: 'spawned'; pid: number }
  | { type: 'error'; code?: string; message: string }
  | { type: 'exit'; code: number | null; signal: string | null };

export const WATCHDOG_SOURCE = String.raw`
'use strict';
const { spawn } = require('node:child_process');
const { writeSync } = require('node:fs');
const cfg = JSON.parse(process.argv[process.argv.length - 1]);
const send = (m) => { try { writeSync(3, JSON.stringify(m) + '\n'); } catch {} };
const env = { ...process.env };
for (const [k, v] of Object.entries(cfg.restoreEnv)) { if (v === null) delete env[k]; else env[k] = v; }
let child;
let stopping = false;
let exited = false;
function stop() {
  if (stopping) return;
  stopping = true;
  if (!child || exited) { process.exit(0); }
  try { child.kill('SIGTERM'); } catch {}
  setTimeout(() => { try { child.kill('SIGKILL'); } catch {} }, cfg.graceMs).unref();
}
process.stdin.on('data', () => {});
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.on('error', stop);
for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) { try { process.on(s, stop); } catch {} }
try {
  child = spawn(cfg.binary, cfg.args, { stdio: ['ignore', 'inherit', 'inherit'], env, shell: cfg.shell, windowsHide: true });
} catch (e) {
  send({ type: 'error', code: e.code, message: e.message });
  process.exit(1);
}
child.on('spawn', () => send({ type: 'spawned', pid: child.pid }));
child.on('error', (e) => { exited = true; send({ type: 'error', code: e.code, message: e.message }); process.exit(1); });
child.on('exit', (code, signal) => { exited = true; send({ type: 'exit', code, signal }); process.exit(0); });
`;
