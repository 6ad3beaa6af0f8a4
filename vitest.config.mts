import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/vscode/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Real servers and child processes: forks isolate them and keep a stuck test from taking the runner with it.
    pool: 'forks',
    // Most of a file's time is spent waiting on sockets, child processes and Chromium, not on the
    // CPU: vitest's default (cores − 1, so one file at a time on CI's 2 cores) left the machine
    // idle. Files share nothing (every server listens on port 0, every folder is a fresh temp
    // one), so three run side by side on 2 cores (half again as many as there are cores).
    maxWorkers: Math.ceil(availableParallelism() * 1.5),
    // One id per run: the web client is built once per run (test/web/harness.ts ensureVendor), not once per file.
    env: { DESKRELAY_TEST_RUN: randomUUID() },
    reporters: ['default'],
    // expect.poll waits for a real condition (a reply reaching "p2", a stream closing); its 1 s
    // default was a time limit in disguise that a loaded CI machine missed. Tests never assert
    // how fast something happens (bench/ does), so the condition gets up to 10 s.
    expect: { poll: { timeout: 10_000 } },
  },
});
