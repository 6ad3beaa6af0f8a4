// `npm test`, what CI runs (.ci/run): the type check, lint and build, the browsers, the real ACP
// agents and code-server (scripts/install-*.mjs), then vitest, then the real-VS-Code suite.
// The first phase's steps run side by side: the type check and lint keep the CPU busy while the
// installs wait on the network, which one after the other left the CPU idle. Each step's output
// is printed whole when it ends; the last lines give every step's time.
// Usage: node scripts/test.mjs
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const node = process.execPath;

/** A phase: its steps run side by side; a step is one command or several in turn. */
const phases = [
  [
    ['typecheck', [npm, 'run', 'typecheck']],
    ['lint', [npm, 'run', 'lint']],
    [
      'build and provision',
      [npm, 'run', 'build'],
      [node, 'scripts/install-chromium.mjs'],
      [node, 'scripts/install-acp-agents.mjs'],
      [node, 'scripts/vscode/install-code-server.mjs'],
    ],
  ],
  [['vitest', [node, 'node_modules/vitest/vitest.mjs', 'run']]],
  [['test:vscode', [npm, 'run', 'test:vscode']]],
];

const times = [];

/** Runs one command; its output goes straight through when `live`, else it is kept and returned. */
function run([cmd, ...args], live) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (out += d));
    child.on('error', (err) => resolve({ code: 1, out: `${out}${err.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
  });
}

async function step([name, ...commands], live) {
  const started = Date.now();
  let out = '';
  let code = 0;
  for (const command of commands) {
    const r = await run(command, live);
    out += r.out;
    code = r.code;
    if (code !== 0) break;
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  times.push(`${name} ${secs} s${code ? ' (failed)' : ''}`);
  if (!live) process.stdout.write(`\n[test] ${name}: ${code ? `failed (exit ${code})` : 'done'} in ${secs} s\n${out}`);
  return code;
}

let failed = false;
for (const phase of phases) {
  const codes = await Promise.all(phase.map((s) => step(s, phase.length === 1)));
  if (codes.some((c) => c !== 0)) {
    failed = true;
    break;
  }
}
console.log(`\n[test] ${times.join(', ')}`);
process.exit(failed ? 1 : 0);
