// Installs the real ACP agents the end-to-end tests drive into an ignored cache folder, from the
// npm registry alone (no install scripts, nothing downloaded besides npm packages): Claude Code
// through @zed-industries/claude-code-acp, Gemini CLI and Qwen Code (pure JS, about 370 MB together).
// Idempotent: a stamp marks a finished install of these versions.
// Usage: node scripts/install-acp-agents.mjs [cacheDir]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ACP_AGENTS = ['@zed-industries/claude-code-acp@0.16.2', '@google/gemini-cli@0.61.0', '@qwen-code/qwen-code@0.24.4'];
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cacheDir = resolve(process.argv[2] ?? join(repoRoot, '.cache', 'acp'));
const stampFile = join(cacheDir, '.installed');
const stamp = JSON.stringify(ACP_AGENTS);

if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) {
  console.log(`[acp] ${ACP_AGENTS.join(', ')} already in ${cacheDir}`);
} else {
  mkdirSync(cacheDir, { recursive: true });
  if (!existsSync(join(cacheDir, 'package.json'))) writeFileSync(join(cacheDir, 'package.json'), '{"name":"deskrelay-acp-agents","private":true}\n');
  console.log(`[acp] installing ${ACP_AGENTS.join(', ')} into ${cacheDir}`);
  const r = spawnSync('npm', ['install', '--prefix', cacheDir, '--ignore-scripts', '--no-audit', '--no-fund', ...ACP_AGENTS], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  if (r.status !== 0) {
    console.error(`[acp] npm install failed (exit ${r.status ?? r.signal})`);
    process.exit(1);
  }
  writeFileSync(stampFile, stamp);
}
