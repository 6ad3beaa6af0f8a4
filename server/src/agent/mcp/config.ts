/**
 * `"mcpServers"` in config.json, in the shape other MCP clients read (Claude Desktop, Cursor, VS
 * Code's mcp.json): `{"<name>": {"command", "args"?, "env"?}}` for a server DeskRelay starts
 * (stdio), `{"<name>": {"url", "headers"?}}` for one it reaches over streamable HTTP.
 */
export type McpServerConfig =
  | { command: string; args: string[]; env: Record<string, string> }
  | { url: string; headers: Record<string, string> };

/** A server's name becomes the first part of its tools' names (`<name>__<tool>`), which providers limit to these characters. */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;

export class McpConfigError extends Error {}

export function parseMcpServers(raw: unknown): Record<string, McpServerConfig> {
  if (raw === undefined || raw === null) return {};
  const shape = '"mcpServers" must be an object: {"<name>": {"command": "…", "args"?: […], "env"?: {…}}} or {"<name>": {"url": "https://…"}}';
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new McpConfigError(shape);
  const out: Record<string, McpServerConfig> = {};
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    const at = `"mcpServers.${name}"`;
    if (!SERVER_NAME.test(name) || name.includes('__')) throw new McpConfigError(`${at}: a server's name is 1 to 32 letters, digits, "_" or "-" (no "__"): it starts its tools' names`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new McpConfigError(`${at} must be an object; ${shape}`);
    const v = value as Record<string, unknown>;
    const strings = (field: string): Record<string, string> => {
      const o = v[field];
      if (o === undefined) return {};
      if (typeof o !== 'object' || o === null || Array.isArray(o) || Object.values(o).some((x) => typeof x !== 'string')) throw new McpConfigError(`${at}.${field} must be an object of strings`);
      return o as Record<string, string>;
    };
    if (typeof v.url === 'string') {
      let url: URL;
      try {
        url = new URL(v.url);
      } catch {
        throw new McpConfigError(`${at}.url is not a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new McpConfigError(`${at}.url must be http(s)`);
      out[name] = { url: url.href, headers: strings('headers') };
      continue;
    }
    if (typeof v.command !== 'string' || v.command.trim() === '') throw new McpConfigError(`${at} needs "command" (a program to start) or "url"`);
    if (v.args !== undefined && (!Array.isArray(v.args) || v.args.some((a) => typeof a !== 'string'))) throw new McpConfigError(`${at}.args must be an array of strings`);
    out[name] = { command: v.command, args: (v.args as string[] | undefined) ?? [], env: strings('env') };
  }
  return out;
}
