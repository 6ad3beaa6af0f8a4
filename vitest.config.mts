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
    // expect.poll waits for a real condition (a reply reaching "p2", a stream closing); its 1 s
    // default was a time limit in disguise that a loaded CI machine missed. Tests never assert
    // how fast something happens (bench/ does), so the condition gets up to 10 s.
    expect: { poll: { timeout: 10_000 } },
  },
});
