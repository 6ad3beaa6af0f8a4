import { parseArgs } from 'node:util';

export interface ServeArgs {
  port?: number;
  host?: string;
  config?: string;
  tunnel: boolean;
  cloudflared?: string;
}

export class UsageError extends Error {}

export const USAGE = `Usage: deskrelay serve [--port N] [--host ADDR] [--config FILE] [--tunnel] [--cloudflared PATH]

  --port N           port to listen on (default 53210; 0 picks a free one)
  --host ADDR        address to bind (default 127.0.0.1; anything else is plain HTTP on your network)
  --config FILE      provider config (default <config dir>/config.json)
  --tunnel           start your cloudflared quick tunnel and pair through it
  --cloudflared PATH the cloudflared binary to use (default: CLOUDFLARED_BIN, then PATH)

cloudflared always forwards to the relay on loopback, and runs with only PATH, HOME, the proxy
and certificate variables of your environment; name any other it needs in
DESKRELAY_TUNNEL_PASS_ENV (comma-separated).
`;

export type Command = { command: 'serve'; args: ServeArgs } | { command: 'help' } | { command: 'version' };

export function parseCommand(argv: string[]): Command {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') return { command: 'help' };
  if (command === '--version' || command === '-v' || command === 'version') return { command: 'version' };
  if (command !== 'serve') throw new UsageError(`unknown command "${command}"; the command is "deskrelay serve"`);
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        config: { type: 'string' },
        tunnel: { type: 'boolean', default: false },
        cloudflared: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return { command: 'help' };
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) throw new UsageError(`--port must be a number from 0 to 65535, not "${values.port}"`);
  }
  if (values.host !== undefined && values.host.trim() === '') throw new UsageError('--host must not be empty');
  return {
    command: 'serve',
    args: { port, host: values.host, config: values.config, tunnel: values.tunnel ?? false, cloudflared: values.cloudflared },
  };
}
