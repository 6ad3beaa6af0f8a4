/**
 * One wire protocol (server/src/protocol.ts) for the relay and the web client: the relay's routes
 * and checks use the very constants the client bundle is built from, so they cannot drift.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEADERS, IDEMPOTENCY_KEY_RE, PATHS, SOCKET_BEARER_PREFIX, SOCKET_PROTOCOL } from '../../server/src/protocol';
import { infoRoute } from '../../server/src/doors/chat/info';
import { healthRoute } from '../../server/src/doors/chat/health';
import { chatStreamRoute } from '../../server/src/doors/chat/chatStream';
import { CHAT_SOCKET_PATH } from '../../server/src/doors/ws/chatSocket';
import { SOCKET_PROTOCOL as SERVER_SOCKET_PROTOCOL } from '../../server/src/doors/ws/auth';
import { chatCancelRoute } from '../../server/src/doors/resumable/cancel';

const ROOT = join(__dirname, '..', '..');

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

  it('is pure: no Node imports, nothing but constants and types (the browser bundle includes it)', () => {
    const source = readFileSync(join(ROOT, 'server', 'src', 'protocol.ts'), 'utf8');
    expect(source).not.toMatch(/^\s*import\s/m);
    expect(source).not.toMatch(/require\(|process\.|node:/);
  });

  it('is the one copy: the web sources and the server files that define these import it', () => {
    for (const file of ['web/src/transports.ts', 'web/src/api.ts', 'server/src/doors/ws/auth.ts', 'server/src/doors/resumable/headers.ts', 'server/src/chat/events.ts']) {
      const source = readFileSync(join(ROOT, file), 'utf8');
      expect(source, file).toMatch(/from '(\.\.\/)+(server\/src\/)?protocol'/);
      expect(source, file).not.toMatch(/'deskrelay\.bearer\.'|'\/v1\/chat\/(stream|cancel|ws)'|'Idempotency-Key'|'Last-Event-ID'/);
    }
  });
});
