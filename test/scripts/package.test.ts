// The Marketplace package: manifest fields, localized strings, the walkthrough, the icon, the
// production bundle and exactly what `vsce ls` ships.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const nls: Record<string, string> = JSON.parse(readFileSync(join(root, 'package.nls.json'), 'utf8'));

/** Every `%key%` string anywhere in the manifest. */
function placeholders(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') {
    const m = /^%([^%]+)%$/.exec(v);
    if (m) out.push(m[1]!);
  } else if (Array.isArray(v)) v.forEach((x) => placeholders(x, out));
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => placeholders(x, out));
  return out;
}

describe('the manifest', () => {
  it('has what the Marketplace shows: icon, categories, keywords, repository, license, banner', () => {
    expect(pkg.icon).toBe('media/icon.png');
    expect(pkg.categories).toEqual(['AI', 'Other']);
    expect(pkg.keywords.length).toBeGreaterThanOrEqual(5);
    expect(pkg.keywords.length).toBeLessThanOrEqual(30);
    expect(pkg.repository.url).toMatch(/^https:\/\//);
    expect(pkg.license).toBe('MIT');
    expect(pkg.galleryBanner).toEqual({ color: expect.stringMatching(/^#[0-9a-f]{6}$/), theme: 'dark' });
    expect(pkg.scripts.package).not.toContain('--allow-missing-repository');
  });

  it('has a 128x128 PNG icon, the one scripts/make-icon.mjs draws', () => {
    const bytes = readFileSync(join(root, pkg.icon));
    const png = PNG.sync.read(bytes);
    expect([png.width, png.height]).toEqual([128, 128]);
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-icon-'));
    try {
      execFileSync(process.execPath, ['scripts/make-icon.mjs', join(dir, 'icon.png')], { cwd: root, stdio: 'pipe' });
      expect(Buffer.compare(readFileSync(join(dir, 'icon.png')), bytes)).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('activates on startup only: VS Code derives the command activations', () => {
    expect(pkg.activationEvents).toEqual(['onStartupFinished']);
  });

  it('takes every user-facing string from package.nls.json, and that file has no unused key', () => {
    const used = placeholders(pkg);
    for (const c of pkg.contributes.commands) expect(c.title).toMatch(/^%.+%$/);
    for (const k of used) expect(nls, k).toHaveProperty([k]);
    expect(Object.keys(nls).sort()).toEqual([...new Set(used)].sort());
  });

  it('every setting is machine scope: a workspace cannot choose what the phone reaches (which provider answers it, issue 21)', () => {
    const settings = Object.entries(pkg.contributes.configuration.properties as Record<string, { scope?: string }>);
    expect(settings.length).toBeGreaterThan(5);
    expect(settings.filter(([, p]) => p.scope !== 'machine' && p.scope !== 'application').map(([name]) => name)).toEqual([]);
  });

  it('has a walkthrough from install to a paired phone: start, provider, tunnel, QR', () => {
    const [w] = pkg.contributes.walkthroughs;
    expect(w.steps.map((s: { id: string }) => s.id)).toEqual(['start', 'provider', 'tunnel', 'scan']);
    const commands = new Set(pkg.contributes.commands.map((c: { command: string }) => c.command));
    for (const s of w.steps) {
      expect(existsSync(join(root, s.media.markdown)), s.media.markdown).toBe(true);
      expect(s.media.markdown).toMatch(/^media\/walkthrough\/.+\.md$/);
      for (const e of s.completionEvents.filter((x: string) => x.startsWith('onCommand:'))) expect(commands).toContain(e.slice('onCommand:'.length));
      // Each step's button runs a contributed command.
      const links = [...nls[s.description.slice(1, -1)]!.matchAll(/\(command:([\w.]+)\)/g)].map((m) => m[1]);
      expect(links.length).toBeGreaterThan(0);
      for (const l of links) expect(commands).toContain(l);
    }
  });
});

describe('the package', () => {
  const out = mkdtempSync(join(tmpdir(), 'deskrelay-prod-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('production build: minified, no source maps', () => {
    execFileSync(process.execPath, ['scripts/build.mjs', '--production', '--outdir', out], { cwd: root, stdio: 'pipe' });
    expect(readdirSync(out).sort()).toEqual(['acp.js', 'cli.js', 'extension.js', 'qrcode.js', 'undici.js', 'web-push.js']);
    const ext = readFileSync(join(out, 'extension.js'), 'utf8');
    expect(ext).not.toContain('sourceMappingURL');
    // Minified: long lines (only template literals keep their newlines).
    expect(ext.length / ext.split('\n').length).toBeGreaterThan(500);
    // 350 KB before the workspace agent (issue 23), whose editor host and node-fs core add ~16 KB;
    // conversations kept on the desktop (issue 30: store, door, Chats view and its webview) bring it to ~410 KB;
    // the agent's desk view (issue 25), devices (26), voice (29) and polka (27) to ~436 KB. The next
    // step is to load the agent's and the chats' desk code on first use, as undici and web-push are.
    // Device keys, pairing codes and agent access per device (issue 36) bring it to ~456 KB.
    // ACP agents' engine (issue 39: ~25 KB; the ACP client library itself is dist/acp.js), the
    // desk's review (41) and kept sessions, worktrees and context fitting (40) bring it to ~524 KB,
    // the phone's Changes and signed actions (38) and kept ACP sessions to ~535 KB; the QR library
    // (~57 KB) then moved out to dist/qrcode.js, loaded on the first QR code drawn.
    expect(statSync(join(out, 'extension.js')).size).toBeLessThan(490_000);
    expect(ext).toContain('deskrelay.start');
    // undici stays out of what activation loads: one lazy require of the bundle beside it.
    expect(ext.match(/require\("\.\/undici\.js"\)/g)).toHaveLength(1);
    expect(ext).not.toContain('UndiciError');
    expect(readFileSync(join(out, 'undici.js'), 'utf8')).toContain('UndiciError');
    // The QR library too: one lazy require, for the first pairing QR code, never on activation.
    expect(ext.match(/require\("\.\/qrcode\.js"\)/g)).toHaveLength(1);
    expect(readFileSync(join(out, 'qrcode.js'), 'utf8')).toContain('errorCorrectionLevel');
    // web-push too (Web Push, issue 15): loaded on the first push, never on activation.
    for (const bundle of ['extension.js', 'cli.js']) expect(readFileSync(join(out, bundle), 'utf8').match(/require\("\.\/web-push\.js"\)/g), bundle).toHaveLength(1);
    expect(ext).not.toContain('Unsupported urgency specified');
    expect(readFileSync(join(out, 'web-push.js'), 'utf8')).toContain('Unsupported urgency specified');
  }, 60_000);

  it('vsce ls lists only what ships: the bundle, media, manifest, README, CHANGELOG, LICENSE', () => {
    const files = execFileSync(join(root, 'node_modules/.bin/vsce'), ['ls', '--no-dependencies'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    expect(files).toContain('dist/extension.js');
    expect(files).toContain('dist/undici.js');
    expect(files).toContain('dist/web-push.js');
    expect(files).toContain('dist/acp.js');
    expect(files).toContain('dist/qrcode.js');
    expect(files).toContain('media/icon.png');
    expect(files).toContain('package.nls.json');
    expect(files).toContain('CHANGELOG.md');
    expect(files).toContain('l10n/bundle.l10n.json');
    for (const f of ['media/walkthrough/start.md', 'media/walkthrough/provider.md', 'media/walkthrough/tunnel.md', 'media/walkthrough/scan.md']) expect(files).toContain(f);
    for (const f of files) {
      expect(f).toMatch(/^(dist\/(extension|undici|web-push|acp|qrcode)\.js|media\/.+|l10n\/bundle\.l10n\.json|package\.json|package\.nls\.json|README\.md|CHANGELOG\.md|LICENSE)$/);
      expect(f).not.toMatch(/\.(map|ts|mts)$|^test\/|^node_modules\/|^scripts\/|^docs\//);
    }
  }, 60_000);
});
