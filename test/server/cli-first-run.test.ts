/**
 * Issue 38 item 10: `deskrelay serve`'s first-run output in order, on the CLI's real stdout. On a
 * loopback address the reachability problem and the tunnel hint come before the pairing payload
 * and its QR code, and the QR code (kept: CONTRACT §7) is captioned as not for a phone.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliSuite, spawnCli } from '../helpers/cli';
import { closedPort } from '../helpers/http';

cliSuite();

describe('deskrelay serve, first run', () => {
  it('says a phone cannot reach a loopback address and how to fix it (--tunnel) before the QR code, whose caption says a phone cannot reach it', async () => {
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
      const caption = at((l) => /a phone cannot reach this address/.test(l), 'the QR code\'s caption');
      const qr = at((l) => /[▀▄█]{3,}/.test(l), 'the QR code');
      const link = at((l) => /^http:\/\/127\.0\.0\.1:\d+\/#token=dr_/.test(l), 'the link');
      const payload = at((l) => l.startsWith('{"url":'), 'the pairing JSON');
      expect(problem).toBeLessThanOrEqual(hint);
      expect(hint).toBeLessThan(caption);
      expect(caption).toBeLessThan(qr);
      expect(qr).toBeLessThan(link);
      expect(link).toBeLessThan(payload);
      expect(lines.some((l) => l.includes("Scan with the phone's camera"))).toBe(false);
    } finally {
      r.child.kill('SIGINT');
    }
  });
});
