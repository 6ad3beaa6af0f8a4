/**
 * One wire protocol (server/src/protocol/) for the relay and the web client: the relay's routes
 * and checks use the very constants the client bundle is built from, so they cannot drift.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, HEADERS, IDEMPOTENCY_KEY_RE, PATHS, SOCKET_BEARER_PREFIX, SOCKET_PROTOCOL } from '../../server/src/protocol';
import { infoRoute } from '../../server/src/doors/chat/info';
import { healthRoute } from '../../server/src/doors/chat/health';
import { chatStreamRoute } from '../../server/src/doors/chat/chatStream';
import { CHAT_SOCKET_PATH } from '../../server/src/doors/ws/chatSocket';
import { SOCKET_PROTOCOL as SERVER_SOCKET_PROTOCOL } from '../../server/src/doors/ws/auth';
import { chatCancelRoute } from '../../server/src/doors/resumable/cancel';

const ROOT = join(__dirname, '..', '..');
/** Every .ts file below a folder. */
const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : e.name.endsWith('.ts') ? [join(d, e.name)] : []));

describe('the shared wire protocol', () => {
  it('names the routes the relay serves', () => {
    expect(infoRoute.path).toBe(PATHS.info);
    expect(healthRoute.path).toBe(PATHS.health);
    expect(chatStreamRoute.path).toBe(PATHS.chatStream);
    expect(CHAT_SOCKET_PATH).toBe(PATHS.chatSocket);
    expect(chatCancelRoute({} as never).path).toBe(PATHS.chatCancel);
    expect(SERVER_SOCKET_PROTOCOL).toBe(SOCKET_PROTOCOL);
    expect(SOCKET_BEARER_PREFIX.startsWith(`${SOCKET_PROTOCOL}.`)).toBe(true);
    expect(HEADERS).toEqual({ idempotencyKey: 'Idempotency-Key', lastEventId: 'Last-Event-ID' });
    expect(IDEMPOTENCY_KEY_RE.test('a'.repeat(22))).toBe(true);
  });

  it('is pure: no Node imports, nothing but constants and types, importing only its own files (the browser bundle includes it)', () => {
    const dir = join(ROOT, 'server', 'src', 'protocol');
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(files).toContain('index.ts');
    for (const file of files) {
      const source = readFileSync(join(dir, file), 'utf8');
      for (const m of source.matchAll(/^\s*(?:import|export)\b[^;]*?from\s+'([^']+)'/gm)) expect(m[1], file).toMatch(/^\.\/[a-zA-Z]+$/);
      expect(source, file).not.toMatch(/require\(|process\.|node:/);
    }
  });

  it('is the one copy: the web sources and the server files that define these import it', () => {
    for (const file of ['web/src/transports.ts', 'web/src/api.ts', 'server/src/doors/ws/auth.ts', 'server/src/doors/resumable/headers.ts', 'server/src/chat/events.ts']) {
      const source = readFileSync(join(ROOT, file), 'utf8');
      expect(source, file).toMatch(/from '(\.\.\/)+(server\/src\/)?protocol'/);
      expect(source, file).not.toMatch(/'deskrelay\.bearer\.'|'\/v1\/chat\/(stream|cancel|ws)'|'Idempotency-Key'|'Last-Event-ID'/);
    }
  });

  it('the web client declares none of its types and imports from server/src only the protocol, its values from the subject files', () => {
    const dir = join(ROOT, 'server', 'src', 'protocol');
    const exported = new Set<string>();
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
      for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/^export (?:interface|type|const|function|class) ([A-Za-z_]+)/gm)) exported.add(m[1]!);
    }
    expect(exported).toContain('AgentSessionSummary');
    const problems: string[] = [];
    for (const file of [...walk(join(ROOT, 'web', 'src')), ...walk(join(ROOT, 'web', 'sw'))]) {
      const source = readFileSync(file, 'utf8');
      const name = file.slice(ROOT.length + 1);
      // A type of the same name, anywhere; a value of the same name, exported.
      for (const m of source.matchAll(/^(?:export )?(?:interface|type) ([A-Za-z_]+)|^export (?:const|function|class) ([A-Za-z_]+)/gm)) {
        const declared = m[1] ?? m[2]!;
        if (exported.has(declared)) problems.push(`${name} declares ${declared}`);
      }
      for (const m of source.matchAll(/^import (type )?[^;]*?from '((?:\.\.\/)+server\/src\/[^']*)'/gm)) {
        const target = m[2]!.replace(/^(\.\.\/)+/, '');
        if (!/^server\/src\/protocol(\/[a-zA-Z]+)?$/.test(target)) problems.push(`${name} imports ${target}`);
        // Values from the index would bring every door's paths into the phone's first download.
        else if (!m[1] && target === 'server/src/protocol') problems.push(`${name} imports values from the protocol's index`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('lists every error code the relay answers with, at the status it answers it', () => {
    const wrong: string[] = [];
    let seen = 0;
    for (const file of walk(join(ROOT, 'server', 'src'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/HttpError\(\s*(\d{3}),\s*'([a-z_]+\.[a-z_]+)'/g)) {
        seen++;
        const status = (ERROR_STATUS as Record<string, number>)[m[2]!];
        if (status !== Number(m[1])) wrong.push(`${file.slice(ROOT.length + 1)}: ${m[1]} ${m[2]} (protocol: ${status ?? 'missing'})`);
      }
    }
    expect(seen).toBeGreaterThan(40);
    expect(wrong).toEqual([]);
  });
});

