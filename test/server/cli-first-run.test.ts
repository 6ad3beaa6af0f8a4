/**
 * Issue 38 item 10: `deskrelay serve`'s first-run output in order, on the CLI's real stdout. On a
 * loopback address the reachability problem and the tunnel hint come first, then the link and
 * the pairing payload, and no QR code: a phone that scanned it could only fail.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliSuite, spawnCli } from '../helpers/cli';
import { closedPort } from '../helpers/http';

cliSuite();

describe('deskrelay serve, first run', () => {
  it('says a phone cannot reach a loopback address and how to fix it (--tunnel) before the link and the JSON, and prints no QR code for it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-first-run-'));
    const port = await closedPort();
    const r = spawnCli(['serve', '--port', String(port)], { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: '' });
    try {
      await expect.poll(() => r.stdout(), { timeout: 10_000 }).toMatch(/\{"url":"[^"]+","token":"dr_[^"]+"\}/);
      const lines = r.stdout().split('\n');
      const at = (test: (line: string) => boolean, what: string) => {
        const i = lines.findIndex(test);
        expect(i, `${what} in:\n${r.stdout()}`).toBeGreaterThanOrEqual(0);
        return i;
      };
      const problem = at((l) => l.includes(`A phone cannot reach it: http://127.0.0.1:${port} is this computer's loopback address`), 'the reachability problem');
      const hint = at((l) => l.includes('Run with --tunnel for an address a phone can reach'), 'the tunnel hint');
      const caption = at((l) => l.startsWith('No QR code for it: a phone would open its own loopback address. Open this link in a browser on this computer'), 'the link\'s caption');
      const link = at((l) => /^http:\/\/127\.0\.0\.1:\d+\/#token=dr_/.test(l), 'the link');
      const payload = at((l) => l.startsWith('{"url":'), 'the pairing JSON');
      expect(problem).toBeLessThanOrEqual(hint);
      expect(hint).toBeLessThan(caption);
      expect(caption).toBeLessThan(link);
      expect(link).toBeLessThan(payload);
      expect(lines.some((l) => /[▀▄█]{3,}/.test(l)), `no QR code in:\n${r.stdout()}`).toBe(false);
      expect(lines.some((l) => l.includes("Scan with the phone's camera"))).toBe(false);
    } finally {
      r.child.kill('SIGINT');
    }
  });
});
