import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The longest files (measured one at a time, 30 to 80 s each), started first: vitest's own order
// on a fresh clone is the largest file first, which left the 10,000-stream and fuzz runs (small
// files) to start last and run on alone at the end. A file missing here only starts later.
const LONGEST = [
  'reliability/leaks',
  'reliability/fuzz',
  'web/daily',
  'web/reply-kept',
  'web/agent',
  'reliability/clientFaults',
  'web/desktop-chats',
  'web/voice',
  'web/pairing-lasts',
  'reliability/boundedMemory',
  'web/design',
  'reliability/bodyBudget',
  'server/badInput',
].map((f) => `/test/${f}.test.ts`);

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST.findIndex((l) => f.moduleId.endsWith(l));
      return i < 0 ? LONGEST.length : i;
    };
    const sorted = await super.sort(files);
    return sorted.map((f, i) => ({ f, i })).sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i).map(({ f }) => f);
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/vscode/**', 'node_modules/**'],
    // Limits for a test that hangs, not how long one may take: files side by side on a loaded
    // 2-core machine take longer than one alone.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Real servers and child processes: forks isolate them and keep a stuck test from taking the runner with it.
    pool: 'forks',
    // Most of a file's time is spent waiting on sockets, child processes and Chromium, not on the
    // CPU: vitest's default (cores − 1, so one file at a time on CI's 2 cores) left the machine
    // idle. Files share nothing (every server listens on port 0, every folder is a fresh temp
    // one), so they run side by side, one per core: three on 2 cores starved two WebKit files
    // (WebKitWebDriver, Xvfb and WebKit's own processes each) past the hang limit.
    maxWorkers: availableParallelism(),
    sequence: { sequencer: LongestFirst },
    // One id per run: the web client is built once per run (test/web/harness.ts ensureVendor), not once per file.
    env: { DESKRELAY_TEST_RUN: randomUUID() },
    reporters: ['default'],
    // expect.poll waits for a real condition (a reply reaching "p2", a stream closing); its 1 s
    // default was a time limit in disguise that a loaded CI machine missed. Tests never assert
    // how fast something happens (bench/ does), so the condition gets up to 20 s (files run
    // side by side).
    expect: { poll: { timeout: 20_000 } },
  },
});
