// Mocha entry point that VS Code's extension host loads through `extensionTestsPath`.
// It runs every compiled *.test.js beside it and writes the outcome to a results file the
// launcher reads (code-server gives the launcher no other channel back from the extension host).
import Mocha from 'mocha';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestResult {
  title: string;
  state: 'passed' | 'failed' | 'pending';
  durationMs?: number;
  error?: string;
}

export interface SuiteResults {
  done: boolean;
  passed: number;
  failed: number;
  pending: number;
  tests: TestResult[];
}

export function resultsFile(): string {
  return process.env.DESKRELAY_E2E_RESULTS ?? join(__dirname, 'results.json');
}

export function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 30_000, reporter: 'spec' });
  const grep = process.env.DESKRELAY_E2E_GREP;
  if (grep) mocha.grep(grep);
  const files = readdirSync(__dirname)
    .filter((f) => f.endsWith('.test.js'))
    .sort();
  for (const f of files) mocha.addFile(join(__dirname, f));

  const results: SuiteResults = { done: false, passed: 0, failed: 0, pending: 0, tests: [] };
  const save = () => writeFileSync(resultsFile(), JSON.stringify(results, null, 2));
  save();
  return new Promise((resolve, reject) => {
    try {
      const runner = mocha.run((failures) => {
        results.done = true;
        save();
        if (failures > 0) reject(new Error(`${failures} tests failed.`));
        else resolve();
      });
      runner.on('pass', (t) => {
        results.passed++;
        results.tests.push({ title: t.fullTitle(), state: 'passed', durationMs: t.duration });
        save();
      });
      runner.on('fail', (t, err: Error) => {
        results.failed++;
        results.tests.push({ title: t.fullTitle(), state: 'failed', durationMs: t.duration, error: err?.stack ?? String(err) });
        save();
      });
      runner.on('pending', (t) => {
        results.pending++;
        results.tests.push({ title: t.fullTitle(), state: 'pending' });
        save();
      });
    } catch (err) {
      results.done = true;
      results.failed++;
      results.tests.push({ title: 'suite setup', state: 'failed', error: err instanceof Error ? err.stack : String(err) });
      save();
      reject(err);
    }
  });
}
