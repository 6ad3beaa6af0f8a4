// ESLint (flat config): ESLint's and typescript-eslint's recommended rules over every folder of
// source, plus this project's layout rules: the relay under server/ never imports vscode, and
// server/src's layers import one way only (docs/architecture.md).
// Folder globs only (no file lists), so files moving inside a folder stay covered.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const NO_VSCODE = {
  paths: [{ name: 'vscode', message: 'server/ is pure Node (deskrelay serve runs it without VS Code): only extension/ imports vscode.' }],
  patterns: [{ group: ['vscode/*'], message: 'server/ never imports vscode.' }],
};

/**
 * The layers of server/src, ground up (docs/architecture.md, /work/shared/architecture.json):
 * each part (a folder, or a file at the top such as protocol.ts) and the parts it may import.
 * Everything not listed is a wrong-way import: up a floor, or sideways where no arrow allows it.
 */
const GROUND = ['protocol', 'errors', 'logger', 'redact', 'streams'];
const BELOW_CHAT = [...GROUND, 'providers', 'tunnel', 'store'];
export const MAY_IMPORT = {
  // Wire names and types shared with the web client: imports nothing of ours.
  protocol: [],
  errors: ['protocol'],
  logger: ['protocol'],
  redact: ['protocol'],
  streams: ['protocol'],
  providers: [...GROUND],
  tunnel: [...GROUND],
  // Kept conversations and sessions hold chat messages as the providers type them.
  store: [...GROUND, 'providers'],
  chat: [...BELOW_CHAT],
  // The agent's model calls go through the chat service (never the other way round).
  agent: [...BELOW_CHAT, 'chat'],
  // The floor of the HTTP side: HTTP facts only, a narrow DeviceMatcher instead of the store.
  http: [...GROUND],
  doors: [...BELOW_CHAT, 'chat', 'agent', 'http'],
  session: [...BELOW_CHAT, 'chat', 'agent', 'http', 'doors'],
  cli: [...BELOW_CHAT, 'chat', 'agent', 'http', 'doors', 'session'],
  index: [...BELOW_CHAT, 'chat', 'agent', 'http', 'doors', 'session'],
};
const PARTS = Object.keys(MAY_IMPORT);
// The deepest file under server/src is three folders down (server/src/agent/hosts/node/x.ts); one more for headroom.
const MAX_DEPTH = 4;

/** One files block per part and depth: a relative import climbs exactly `depth` folders to reach server/src. */
function layerBlocks() {
  const blocks = [];
  for (const [part, allowed] of Object.entries(MAY_IMPORT)) {
    const forbidden = PARTS.filter((other) => other !== part && !allowed.includes(other));
    const top = ['protocol', 'errors', 'logger', 'redact', 'index'].includes(part);
    for (let depth = top ? 0 : 1; depth <= (top && part !== 'protocol' ? 0 : MAX_DEPTH); depth++) {
      const files = depth === 0 ? [`server/src/${part}.ts`] : [`server/src/${part}/${'*/'.repeat(depth - 1)}*.ts`];
      const up = depth === 0 ? '\\./' : `(\\.\\./){${depth}}`;
      const patterns = forbidden.length === 0 ? [] : [{ regex: `^${up}(${forbidden.join('|')})(\\.ts)?(/.*)?$`, message: `server/src/${part} sits below these layers and must not import them (docs/architecture.md): ${forbidden.join(', ')}.` }];
      blocks.push({ files, rules: { 'no-restricted-imports': ['error', { ...NO_VSCODE, patterns: [...NO_VSCODE.patterns, ...patterns] }] } });
    }
  }
  return blocks;
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', '.tsbuild/**', '.vscode-test/**', 'test-results/**', 'media/web/vendor/**', 'media/web/app.js', 'media/web/sw.js', 'media/web/chunks/**', 'media/markdown.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // An empty catch is how this code says "best effort" (a probe, a cleanup).
      'no-empty': ['error', { allowEmptyCatch: true }],
      // `const { apiKeyEnv: _, ...rest }` drops a field on purpose; a caught error may go unread.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true, caughtErrors: 'none', argsIgnorePattern: '^_' }],
      // A `let` that a closure reads before its one assignment (a token known only after a restart).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Matching ANSI escapes and NUL bytes in cloudflared's and providers' output is the point.
      'no-control-regex': 'off',
      // Typed EventEmitter events are declared by merging an interface into the class (QuickTunnel).
      '@typescript-eslint/no-unsafe-declaration-merging': 'off',
      // The relay hands out getters on an object literal that read its live fields through `self`.
      '@typescript-eslint/no-this-alias': 'off',
    },
  },
  {
    files: ['**/*.cjs'],
    // CommonJS files (a --require preload, a bench probe) load modules with require() by nature.
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['media/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser, acquireVsCodeApi: 'readonly' } },
    // The pages' own top-level functions (e.g. stop) may share a name with a window property.
    rules: { 'no-redeclare': ['error', { builtinGlobals: false }] },
  },
  {
    files: ['web/**/*.ts'],
    // The phone web client runs in the browser, not in Node.
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['test/**'],
    rules: {
      // Tests read parsed JSON and stand-in wire formats of arbitrary shape.
      '@typescript-eslint/no-explicit-any': 'off',
      // A regex matching cloudflared's column-aligned banner spells its spaces as they are.
      'no-regex-spaces': 'off',
    },
  },
  {
    files: ['test/e2e/vscode/suite/**'],
    // The suite reaches the very module instance VS Code loaded through Node's require cache.
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['server/**'],
    rules: { 'no-restricted-imports': ['error', NO_VSCODE] },
  },
  // After the server/** block: each of these repeats NO_VSCODE, as a later block's options replace an earlier one's.
  ...layerBlocks(),
  {
    files: ['web/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+(server|extension)/(?!src/protocol(\\.ts|/.*)?$)', message: 'The phone web client shares only the protocol with the server: import from server/src/protocol (move what you need there).' }] },
      ],
    },
  },
  {
    files: ['extension/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+server/src/.+', message: 'extension/ reaches the relay only through server/src/index.ts: import from "../../server/src" (export what you need there).' }] },
      ],
    },
  },
);
