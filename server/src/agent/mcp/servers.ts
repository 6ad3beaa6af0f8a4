import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from '../../logger';
import type { AgentTool } from '../tools/tool';
import { WorkspaceError } from '../workspace';
import type { McpServerConfig } from './config';
import { GroupStdioTransport } from './stdioTransport';

/** How a configured tool server is doing, as the phone's agent screen and `deskrelay doctor` say it. */
export interface ToolServerStatus {
  name: string;
  ok: boolean;
  /** Why it is not working (failed to start, stopped since): its message, never fatal. */
  error?: string;
  /** Tools it offers (when ok). */
  tools?: number;
}

export interface McpServersOptions {
  /** The environment a stdio server starts from before its own `env`: the scrubbed command environment. */
  env(): NodeJS.ProcessEnv;
  /** Where stdio servers run (the first agent folder). */
  cwd?: string;
  /** Tool names (`<server>__<tool>`) that run without asking (config.json `agent.autoApproveTools`). */
  autoApprove(): readonly string[];
  logger: Logger;
  version: string;
  /** Connecting and listing tools, at most (default 30 s). */
  startTimeoutMs?: number;
}

/** What a provider accepts as a tool name (OpenAI's rule, the strictest of them). */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

interface ServerState {
  status: ToolServerStatus;
  client?: Client;
  tools: { name: string; description?: string; inputSchema: Record<string, unknown> }[];
}

/**
 * The MCP servers of config.json's `mcpServers`, started once and offered to the CLI's agent as
 * tools named `<server>__<tool>`. Each call asks first (approval kind `tool`) unless its name is
 * in `agent.autoApproveTools`. A server that fails to start, or stops later, is reported and
 * left out; nothing else depends on it.
 */
export class McpServers {
  private readonly states = new Map<string, ServerState>();
  private starting: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly configs: Readonly<Record<string, McpServerConfig>>,
    private readonly options: McpServersOptions,
  ) {
    for (const name of Object.keys(configs)) this.states.set(name, { status: { name, ok: false, error: 'Starting…' }, tools: [] });
  }

  get size(): number {
    return this.states.size;
  }

  /** Connects every server (once); settles when each is up or has failed. */
  start(): Promise<void> {
    this.starting ??= Promise.all(Object.entries(this.configs).map(([name, config]) => this.connect(name, config))).then(() => {});
    return this.starting;
  }

  status(): ToolServerStatus[] {
    return [...this.states.values()].map((s) => ({ ...s.status }));
  }

  tools(): AgentTool[] {
    const auto = this.options.autoApprove();
    const out: AgentTool[] = [];
    for (const [server, state] of this.states) {
      const client = state.client;
      if (!state.status.ok || !client) continue;
      for (const tool of state.tools) out.push(this.tool(server, client, tool, auto));
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.states.values()].map((s) => s.client?.close().catch(() => {})));
  }

  private tool(server: string, client: Client, tool: ServerState['tools'][number], auto: readonly string[]): AgentTool {
    const name = `${server}__${tool.name}`;
    return {
      spec: { name, description: `(MCP server "${server}") ${tool.description ?? ''}`.trim(), parameters: tool.inputSchema },
      approval: auto.includes(name) ? 'never' : 'tool',
      prepare: (input, ctx) =>
        Promise.resolve({
          subject: name,
          grantKey: name,
          async run() {
            let result;
            try {
              result = await client.callTool({ name: tool.name, arguments: input }, undefined, { signal: ctx.signal, timeout: ctx.limits.commandTimeoutMs });
            } catch (err) {
              throw new WorkspaceError(`${name} failed: ${err instanceof Error ? err.message : String(err)}`);
            }
            const text = resultText(result as { content?: unknown; structuredContent?: unknown });
            if (result.isError === true) throw new WorkspaceError(`${name} failed: ${text}`);
            return text === '' ? `${name} returned nothing readable as text.` : text;
          },
        }),
    };
  }

  private async connect(name: string, config: McpServerConfig): Promise<void> {
    const state = this.states.get(name)!;
    const { logger } = this.options;
    const client = new Client({ name: 'deskrelay', version: this.options.version });
    const stdio = 'command' in config ? new GroupStdioTransport({ command: config.command, args: config.args, env: { ...this.options.env(), ...config.env }, cwd: this.options.cwd }) : undefined;
    const transport: Transport = stdio ?? new StreamableHTTPClientTransport(new URL((config as { url: string }).url), { requestInit: { headers: (config as { headers: Record<string, string> }).headers } });
    client.onerror = (err) => logger.warn(`mcp ${name}: ${err.message}`);
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeoutMs = this.options.startTimeoutMs ?? 30_000;
      await Promise.race([
        (async () => {
          await client.connect(transport);
          const tools: ServerState['tools'] = [];
          let cursor: string | undefined;
          do {
            const page = await client.listTools(cursor ? { cursor } : undefined);
            tools.push(...page.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as Record<string, unknown> })));
            cursor = page.nextCursor;
          } while (cursor);
          state.tools = tools.filter((t) => {
            const ok = TOOL_NAME.test(`${name}__${t.name}`);
            if (!ok) logger.warn(`mcp ${name}: tool ${JSON.stringify(t.name.slice(0, 80))} left out (a tool's name must be letters, digits, "_" or "-", at most 64 with the server's)`);
            return ok;
          });
        })(),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs))),
      ]);
    } catch (err) {
      const why = `${err instanceof Error ? err.message : String(err)}${stdio?.stderr ? ` (stderr: ${stdio.stderr.split('\n').at(-1)})` : ''}`;
      state.status = { name, ok: false, error: `Could not start: ${why}` };
      logger.warn(`mcp ${name}: could not start: ${why}`);
      await client.close().catch(() => {});
      return;
    } finally {
      clearTimeout(timer);
    }
    if (this.closed) {
      await client.close().catch(() => {});
      return;
    }
    state.client = client;
    state.status = { name, ok: true, tools: state.tools.length };
    logger.info(`mcp ${name}: ${state.tools.length} tool${state.tools.length === 1 ? '' : 's'}`);
    client.onclose = () => {
      if (this.closed) return;
      state.status = { name, ok: false, error: `Stopped${stdio?.stderr ? ` (stderr: ${stdio.stderr.split('\n').at(-1)})` : ''}; restart the relay to start it again.` };
      state.client = undefined;
      logger.warn(`mcp ${name}: stopped`);
    };
  }
}

/** A tool result's content as the model reads it: text as it is, anything else named. */
function resultText(result: { content?: unknown; structuredContent?: unknown }): string {
  const parts = Array.isArray(result.content) ? (result.content as Record<string, unknown>[]) : [];
  const text = parts
    .map((p) => {
      if (p.type === 'text' && typeof p.text === 'string') return p.text;
      if (p.type === 'resource' && typeof (p.resource as { text?: unknown })?.text === 'string') return (p.resource as { text: string }).text;
      if (p.type === 'resource_link' || p.type === 'resource') return `[resource ${String((p as { uri?: unknown }).uri ?? (p.resource as { uri?: unknown })?.uri ?? '')}]`;
      return `[${String(p.type)} ${String(p.mimeType ?? '')}]`.replace(' ]', ']');
    })
    .join('\n');
  if (text === '' && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return text;
}
