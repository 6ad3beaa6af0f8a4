#!/usr/bin/env node
// Runs the extension in a real VS Code: code-server 4.96.4 (VS Code 1.96.4) driven by Debian's
// Chromium through playwright-core. Two parts, one code-server:
//   1. the Mocha suite (test/e2e/vscode/suite) inside the real extension host, through
//      `extensionTestsPath`; its `run()` writes a results file that this launcher reads;
//   2. the UI tests (test/e2e/vscode/ui.ts) that drive the workbench like a person does.
// Prints every test, then `N passed, N failed`; exits non-zero on any failure or timeout.
// Always cleans up code-server, Chromium and the temp dirs.
//
// Usage: node scripts/vscode/run-e2e.mjs [--timeout SECONDS] [--grep TEXT] [--skip-ui] [--skip-suite] [--keep] [--untrusted]
// --untrusted opens the workspace in restricted mode (workspace trust on, folder not trusted) and
// runs only the suites whose title says "untrusted" (they skip themselves in a trusted run).
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, copyFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureCodeServer, entryScript } from './install-code-server.mjs';
import { CHROMIUM, CHROMIUM_FLAGS, sleep, startCodeServer as launchCodeServer, waitFor } from './code-server.mjs';
import { compileTests, buildDir } from './compile-tests.mjs';
import { e2eDirs } from './e2e-dirs.mjs';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const artifactsDir = join(repoRoot, 'test-results');
const LM_STANDIN = join(repoRoot, 'test', 'e2e', 'vscode', 'lm-standin');

const { values: args } = parseArgs({
  options: {
    timeout: { type: 'string', default: '600' },
    grep: { type: 'string' },
    'skip-ui': { type: 'boolean', default: false },
    'skip-suite': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    untrusted: { type: 'boolean', default: false },
    // Check a packaged .vsix instead of the checkout: installs it and runs the UI tests only.
    vsix: { type: 'string' },
  },
});

const t0 = Date.now();
const log = (m) => console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${m}`);

/** Everything to undo, last first. */
const cleanups = [];
let cleanedUp = false;
async function cleanup() {
  if (cleanedUp) return;
  cleanedUp = true;
  while (cleanups.length) {
    const fn = cleanups.pop();
    try {
      await fn();
    } catch (err) {
      console.error(`[e2e] cleanup: ${err instanceof Error ? err.message : err}`);
    }
  }
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    console.error(`[e2e] ${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** Workbench URL that opens `folder` and passes VS Code's test options (as `code --extensionDevelopmentPath …` would). */
export function workbenchUrl(base, port, folder, { testsPath } = {}) {
  const remote = (p) => `vscode-remote://127.0.0.1:${port}${p}`;
  if (args.vsix) return `${base}/?folder=${encodeURIComponent(folder)}`;
  const payload = [['extensionDevelopmentPath', remote(repoRoot)]];
  if (testsPath) {
    payload.push(['extensionTestsPath', remote(testsPath)]);
    // The stand-in chat models' extension (installed below) uses VS Code 1.96's chatProvider
    // proposal; the web workbench enables proposed API this way.
    payload.push(['enableProposedApi', '']);
  }
  return `${base}/?folder=${encodeURIComponent(folder)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
}

/** Copies the logs worth reading after a failure into test-results/vscode/. */
function keepLogs(tmp, cs) {
  const dest = join(artifactsDir, 'vscode');
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  if (cs) copyFileSync(cs.logFile, join(dest, 'code-server.log'));
  const walk = (dir) => {
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.log$/.test(name)) {
        const flat = relative(join(tmp, 'ud', 'logs'), p).replaceAll('/', '_');
        copyFileSync(p, join(dest, flat));
      }
    }
  };
  walk(join(tmp, 'ud', 'logs'));
  for (const f of ['browser-console.log']) if (existsSync(join(tmp, f))) copyFileSync(join(tmp, f), join(dest, f));
  return dest;
}

function filesUnder(dir, pattern) {
  const out = [];
  const walk = (d) => {
    for (const name of existsSync(d) ? readdirSync(d) : []) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (pattern.test(name)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/** Checks on what the run left behind: the output channel's request lines, and no secret in any log. */
function checkLogs(tmp, cs, secretsPath) {
  const check = (title, fn) => {
    const started = Date.now();
    try {
      fn();
      results.push({ title: `[logs] ${title}`, state: 'passed', durationMs: Date.now() - started });
    } catch (err) {
      results.push({ title: `[logs] ${title}`, state: 'failed', durationMs: Date.now() - started, error: err instanceof Error ? err.message : String(err) });
    }
  };
  const outputLogs = filesUnder(join(tmp, 'ud', 'logs'), /^\d+-DeskRelay\.log$/);
  check('the DeskRelay output channel has one line per request (method, path, status, duration, provider)', () => {
    const text = outputLogs.map((f) => readFileSync(f, 'utf8')).join('\n');
    if (!outputLogs.length) throw new Error('no DeskRelay output channel log found');
    if (!/ http +POST \/v1\/chat\/stream 200 \d+ms provider=\S+/.test(text)) throw new Error(`no chat request line in the DeskRelay output:\n${text.slice(0, 2000)}`);
    if (!/ http +GET \/v1\/remote\/info 401 \d+ms/.test(text)) throw new Error('no info request line in the DeskRelay output');
  });
  check('no token or API key in any VS Code log, the browser console or the settings', () => {
    const secrets = readFileSync(secretsPath, 'utf8').split('\n').filter(Boolean);
    if (secrets.length < 3) throw new Error(`the tests recorded only ${secrets.length} secrets`);
    const files = [
      ...filesUnder(join(tmp, 'ud', 'logs'), /\.log$/),
      ...filesUnder(join(tmp, 'xdg-data'), /\.log$/),
      cs.logFile,
      join(tmp, 'browser-console.log'),
      join(tmp, 'ud', 'User', 'settings.json'),
      join(tmp, 'ud', 'Machine', 'settings.json'),
    ].filter((f) => existsSync(f));
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const s of secrets) if (text.includes(s)) throw new Error(`${relative(tmp, f)} contains a secret (${s.slice(0, 6)}…)`);
    }
  });
}

/** Every test's outcome: { title, state: 'passed'|'failed'|'pending', error?, durationMs? }. */
const results = [];

async function main() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's Chromium first (apt-get update && apt-get install -y chromium)`);
  }
  if (!existsSync(join(repoRoot, 'dist', 'extension.js'))) {
    throw new Error('dist/extension.js is missing: run `npm run build` first');
  }
  rmSync(join(artifactsDir, 'vscode'), { recursive: true, force: true });
  for (const f of existsSync(artifactsDir) ? readdirSync(artifactsDir) : []) if (f.startsWith('ui-failure-')) rmSync(join(artifactsDir, f));
  const installStarted = Date.now();
  ensureCodeServer();
  const installSecs = (Date.now() - installStarted) / 1000;
  log(`code-server ready (${installSecs.toFixed(1)} s)`);
  await compileTests();
  log('tests compiled');

  const tmp = mkdtempSync(join(tmpdir(), 'deskrelay-e2e-'));
  cleanups.push(() => {
    if (args.keep) log(`kept ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  });
  const { workspace, configDir, resultsPath } = e2eDirs(tmp);
  const secretsPath = join(tmp, 'secrets.txt');
  writeFileSync(secretsPath, '');
  const env = {
    ...process.env,
    DESKRELAY_CONFIG_DIR: configDir,
    DESKRELAY_E2E_RESULTS: resultsPath,
    DESKRELAY_E2E_SECRETS: secretsPath,
    XDG_CONFIG_HOME: join(tmp, 'xdg-config'),
    XDG_DATA_HOME: join(tmp, 'xdg-data'),
    // The stand-ins are on loopback: never through a proxy from the environment.
    NO_PROXY: '*',
  };
  if (args.untrusted) {
    args.grep ??= 'untrusted';
    args['skip-ui'] = true;
    env.DESKRELAY_E2E_UNTRUSTED = '1';
  }
  if (args.grep) env.DESKRELAY_E2E_GREP = args.grep;
  delete env.VSCODE_IPC_HOOK_CLI;

  if (args.vsix) {
    const vsix = resolve(args.vsix);
    log(`installing ${relative(repoRoot, vsix)} into code-server`);
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, [entryScript(), '--extensions-dir', join(tmp, 'ext'), '--user-data-dir', join(tmp, 'ud'), '--install-extension', vsix], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`installing ${vsix} failed:\n${r.stdout}\n${r.stderr}`);
    args['skip-suite'] = true;
  }
  // A test-only extension registering stand-in chat models (test/e2e/vscode/lm-standin), copied
  // into the extensions folder: a second extensionDevelopmentPath is not scanned by code-server.
  cpSync(LM_STANDIN, join(tmp, 'ext', 'deskrelay-test.lm-standin-0.0.1'), { recursive: true });
  const cs = await launchCodeServer(tmp, env, { onCleanup: (fn) => cleanups.push(fn), log, untrusted: args.untrusted });
  log(`code-server listening on ${cs.base}`);
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  cleanups.push(async () => {
    await Promise.race([browser.close(), sleep(5000)]);
    log('chromium closed');
  });
  const consoleLog = join(tmp, 'browser-console.log');
  const newPage = async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: cs.base });
    const page = await context.newPage();
    page.on('console', (m) => writeFileSync(consoleLog, `[${m.type()}] ${m.text()}\n`, { flag: 'a' }));
    page.on('pageerror', (e) => writeFileSync(consoleLog, `[pageerror] ${e.message}\n`, { flag: 'a' }));
    return { context, page };
  };

  let failedToRun = null;
  try {
    if (!args['skip-suite']) {
      // Part 1: the Mocha suite inside the extension host.
      const testsPath = join(buildDir, 'suite', 'index.js');
      const { context, page } = await newPage();
      log('opening the workbench with the Mocha suite');
      await page.goto(workbenchUrl(cs.base, cs.port, workspace, { testsPath }));
      const suite = await waitFor(
        'the Mocha suite to finish in the extension host',
        () => {
          if (!cs.isAlive()) throw new Error('code-server exited during the suite');
          try {
            const r = JSON.parse(readFileSync(resultsPath, 'utf8'));
            return r.done ? r : false;
          } catch {
            return false;
          }
        },
        Math.max(30_000, Number(args.timeout) * 1000 - (Date.now() - t0) - 60_000),
        500,
      ).catch((err) => {
        // Report what did run before the timeout.
        let partial = { tests: [] };
        try {
          partial = JSON.parse(readFileSync(resultsPath, 'utf8'));
        } catch {
          /* nothing ran */
        }
        results.push(...partial.tests.map((t) => ({ ...t, title: `[extension host] ${t.title}` })));
        throw err;
      });
      results.push(...suite.tests.map((t) => ({ ...t, title: `[extension host] ${t.title}` })));
      log(`Mocha suite done: ${suite.passed} passed, ${suite.failed} failed`);
      await context.close();
    }

    if (!args['skip-ui']) {
      // Part 2: the workbench driven like a person would.
      const ui = await import(pathToFileURL(join(buildDir, 'ui.mjs')).href);
      for (const test of ui.tests) {
        if (args.grep && !test.title.includes(args.grep)) continue;
        const { context, page } = await newPage();
        const started = Date.now();
        log(`UI: ${test.title}`);
        try {
          await test.run({
            page,
            context,
            open: async () => {
              await page.goto(workbenchUrl(cs.base, cs.port, workspace));
              await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
            },
            settings: (values) => ui.mergeSettings(join(cs.ud, 'Machine', 'settings.json'), values),
            rememberSecret: (secret) => writeFileSync(secretsPath, `${secret}\n`, { flag: 'a' }),
            workspace,
            configDir,
            artifactsDir,
            repoRoot,
            log,
          });
          results.push({ title: `[ui] ${test.title}`, state: 'passed', durationMs: Date.now() - started });
        } catch (err) {
          mkdirSync(artifactsDir, { recursive: true });
          const shot = join(artifactsDir, `ui-failure-${test.title.replace(/\W+/g, '-')}.png`);
          await page.screenshot({ path: shot }).catch(() => {});
          results.push({ title: `[ui] ${test.title}`, state: 'failed', durationMs: Date.now() - started, error: `${err instanceof Error ? err.stack : err}\n(screenshot: ${relative(repoRoot, shot)})` });
        } finally {
          await context.close().catch(() => {});
        }
      }
    }
    if (!args.grep && !args['skip-suite']) checkLogs(tmp, cs, secretsPath);
  } catch (err) {
    failedToRun = err;
  }

  const failed = results.filter((r) => r.state === 'failed').length + (failedToRun ? 1 : 0);
  if (failed) log(`logs kept in ${relative(repoRoot, keepLogs(tmp, cs))}`);
  return { results, failedToRun };
}

function summarize({ results, failedToRun }) {
  console.log('\nDeskRelay in a real VS Code (code-server 4.96.4):');
  for (const r of results) {
    const mark = r.state === 'passed' ? '✓' : r.state === 'failed' ? '✗' : '-';
    console.log(`  ${mark} ${r.title}${r.durationMs !== undefined ? ` (${r.durationMs} ms)` : ''}`);
  }
  for (const r of results.filter((x) => x.state === 'failed')) {
    console.log(`\n✗ ${r.title}\n${String(r.error).split('\n').map((l) => `    ${l}`).join('\n')}`);
  }
  if (failedToRun) console.log(`\n✗ harness: ${failedToRun instanceof Error ? failedToRun.message : failedToRun}`);
  const passed = results.filter((r) => r.state === 'passed').length;
  const failed = results.filter((r) => r.state === 'failed').length + (failedToRun ? 1 : 0);
  const skipped = results.filter((r) => r.state === 'pending').length;
  console.log(`\nran in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(skipped ? `${passed} passed, ${failed} failed, ${skipped} skipped` : `${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0;
}

const overall = Number(args.timeout) * 1000;
let timer;
const timeout = new Promise((_, rej) => {
  timer = setTimeout(() => rej(new Error(`the whole run took longer than ${args.timeout} s`)), overall);
});
let outcome;
try {
  outcome = await Promise.race([main(), timeout]);
} catch (err) {
  outcome = { results, failedToRun: err };
} finally {
  clearTimeout(timer);
  await cleanup();
}
const ok = summarize(outcome);
process.exit(ok ? 0 : 1);
