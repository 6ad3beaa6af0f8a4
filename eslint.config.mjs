// ESLint (flat config): ESLint's and typescript-eslint's recommended rules over every folder of
// source, plus this project's layout rule: the relay under server/ never imports vscode.
// Folder globs only (no file lists), so files moving inside a folder stay covered.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

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
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'vscode', message: 'server/ is pure Node (deskrelay serve runs it without VS Code): only extension/ imports vscode.' }], patterns: [{ group: ['vscode/*'], message: 'server/ never imports vscode.' }] },
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
