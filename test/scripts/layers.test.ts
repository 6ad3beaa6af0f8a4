// The layering of server/src written down in eslint.config.mjs (docs/architecture.md): a
// wrong-way import fails `npm run lint`, wherever in its folder the file sits; a right-way one
// passes; the web client imports only the protocol module.
import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const eslint = new ESLint({ cwd: root });
const messages = async (code: string, file: string) =>
  (await eslint.lintText(code, { filePath: resolve(root, file) }))[0]!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
const importing = (path: string) => `import { thing } from '${path}';\nexport const t = thing;\n`;
const importingType = (path: string) => `import type { Thing } from '${path}';\nexport type T = Thing;\n`;

describe('one-way layers (eslint.config.mjs)', () => {
  it('fails http/ importing the chat service, a door, a store or the session, type imports included', async () => {
    expect(await messages(importing('../chat/service'), 'server/src/http/x.ts')).toEqual([expect.stringMatching(/server\/src\/http .*must not import/)]);
    expect(await messages(importingType('../doors/context'), 'server/src/http/x.ts')).toHaveLength(1);
    expect(await messages(importingType('../store/devices'), 'server/src/http/x.ts')).toHaveLength(1);
    expect(await messages(importing('../../session/relay'), 'server/src/http/sub/x.ts')).toHaveLength(1);
  }, 60_000);

  it('fails the chat core importing a door, http or the agent, and the agent importing http', async () => {
    expect(await messages(importing('../doors/door'), 'server/src/chat/x.ts')).toHaveLength(1);
    expect(await messages(importing('../http/errors'), 'server/src/chat/x.ts')).toHaveLength(1);
    expect(await messages(importing('../agent/session'), 'server/src/chat/x.ts')).toHaveLength(1);
    expect(await messages(importing('../../http/request'), 'server/src/agent/tools/x.ts')).toHaveLength(1);
    expect(await messages(importing('../providers/types'), 'server/src/store/x.ts')).toEqual([]);
    expect(await messages(importing('../store/devices'), 'server/src/providers/x.ts')).toHaveLength(1);
  }, 60_000);

  it('passes right-way imports: doors on http and chat, agent on chat, a door on its own folder, anything on the ground floor', async () => {
    for (const [path, file] of [
      ['../chat/service', 'server/src/doors/x.ts'],
      ['../../http/writers', 'server/src/doors/openai/x.ts'],
      // From a door's folder, ../chat is the chat door (doors/chat), not the chat core.
      ['../chat/chatStream', 'server/src/doors/openai/x.ts'],
      ['../chat/service', 'server/src/agent/x.ts'],
      ['../streams/frameLog', 'server/src/agent/x.ts'],
      ['../protocol', 'server/src/http/x.ts'],
      ['../errors', 'server/src/http/x.ts'],
      ['../doors/context', 'server/src/session/x.ts'],
      ['./session/relay', 'server/src/index.ts'],
    ]) {
      expect(await messages(importing(path), file), `${file} → ${path}`).toEqual([]);
    }
  }, 60_000);

  it('fails the ground floor importing up, and the protocol importing anything of ours', async () => {
    expect(await messages(importing('../http/request'), 'server/src/streams/x.ts')).toHaveLength(1);
    expect(await messages(importing('./chat/events'), 'server/src/errors.ts')).toHaveLength(1);
    expect(await messages(importing('./errors'), 'server/src/protocol.ts')).toHaveLength(1);
    expect(await messages(importing('../logger'), 'server/src/protocol/x.ts')).toHaveLength(1);
  }, 60_000);

  it('lets the web client import the protocol module only', async () => {
    expect(await messages(importing('../../server/src/protocol'), 'web/src/x.ts')).toEqual([]);
    expect(await messages(importing('../../../server/src/protocol/paths'), 'web/src/agent/x.ts')).toEqual([]);
    expect(await messages(importing('../../server/src/doors/conversations/markdown'), 'web/src/x.ts')).toHaveLength(1);
    expect(await messages(importingType('../../server/src/chat/service'), 'web/src/x.ts')).toHaveLength(1);
    expect(await messages(importing('../../server/src/protocolHelpers'), 'web/src/x.ts')).toHaveLength(1);
  }, 60_000);

  it('knows every part of server/src (a new folder gets its line in MAY_IMPORT)', async () => {
    const { MAY_IMPORT } = (await import(resolve(root, 'eslint.config.mjs'))) as { MAY_IMPORT: Record<string, string[]> };
    const parts = readdirSync(resolve(root, 'server/src')).map((name) => name.replace(/\.ts$/, ''));
    for (const part of parts) expect(Object.keys(MAY_IMPORT), part).toContain(part);
  }, 60_000);
});
