// An MCP server reached over streamable HTTP ("mcpServers": {"<name>": {"url", "headers"}}):
// its tools listed as <server>__<tool>, asking first, called with the config's headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../server/src/agent/limits';
import { McpServers } from '../../server/src/agent/mcp/servers';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import { silentLogger } from '../../server/src/logger';
import { startHttpMcp } from '../fixtures/mcp/httpServer';

let mcp: Awaited<ReturnType<typeof startHttpMcp>>;
beforeAll(async () => {
  mcp = await startHttpMcp();
});
afterAll(() => mcp.close());

describe('MCP over streamable HTTP', () => {
  it('lists and calls the server\'s tool with the configured headers', async () => {
    const servers = new McpServers({ web: { url: mcp.url, headers: { 'X-Team': 'app' } } }, { env: () => ({}), autoApprove: () => [], logger: silentLogger, version: 'test' });
    try {
      await servers.start();
      expect(servers.status()).toEqual([{ name: 'web', ok: true, tools: 1 }]);
      const [tool] = servers.tools();
      expect(tool!.spec.name).toBe('web__shout');
      expect(tool!.approval).toBe('tool');
      const ctx = { workspace: new NodeWorkspace({ folder: __dirname, configDir: '/nonexistent' }), limits: DEFAULT_LIMITS, signal: new AbortController().signal };
      const prepared = await tool!.prepare({ text: 'quiet please' }, ctx);
      expect(prepared.grantKey).toBe('web__shout');
      expect(await prepared.run()).toBe('QUIET PLEASE');
      expect(mcp.headers.every((h) => h === 'app')).toBe(true);
    } finally {
      await servers.close();
    }
  });

  it('a URL where nothing answers is reported, not thrown', async () => {
    const servers = new McpServers({ gone: { url: 'http://127.0.0.1:9/mcp', headers: {} } }, { env: () => ({}), autoApprove: () => [], logger: silentLogger, version: 'test' });
    await servers.start();
    const [status] = servers.status();
    expect(status).toMatchObject({ name: 'gone', ok: false, error: expect.stringContaining('Could not start') });
    expect(servers.tools()).toEqual([]);
    await servers.close();
  });
});
