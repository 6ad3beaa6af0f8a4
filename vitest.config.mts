import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/vscode/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Real servers and child processes: forks isolate them and keep a stuck test from taking the runner with it.
    pool: 'forks',
    reporters: ['default'],
  },
});
