import { parseArgs } from 'node:util';
import { isTunnelKind, TUNNEL_KINDS, type TunnelKind } from '../tunnel/tunnel';
import { tunnelKindInfo } from '../tunnel/agents';

export interface ServeArgs {
  port?: number;
  host?: string;
  config?: string;
  /** Which tunnel to start (`--tunnel [kind]`), or none. */
  tunnel: TunnelKind | undefined;
  cloudflared?: string;
  tailscale?: string;
  ngrok?: string;
  /** cloudflare-named: the public hostname; ngrok: the user's domain. */
  hostname?: string;
  /** `--agent DIR`, repeatable: folders the workspace agent may work in. */
  agent: string[];
}

/** `deskrelay doctor [--config FILE] [--cloudflared PATH]`. */
export interface DoctorArgs {
  config?: string;
  cloudflared?: string;
}

export class UsageError extends Error {}

/** `deskrelay devices [revoke|allow|deny <id>] [--port N]`, and `deskrelay pair [--port N]` (`pair`). */
export interface DevicesArgs {
  revoke?: string;
  /** Let this device use the agent (`true`) or not (`false`). */
  agent?: { id: string; allowed: boolean };
  /** Ask the running relay for a one-time pairing code. */
  pair?: boolean;
  port?: number;
}

export const USAGE = `Usage: deskrelay serve [--port N] [--host ADDR] [--config FILE] [--tunnel [KIND]] [--hostname HOST]
                       [--cloudflared PATH] [--tailscale PATH] [--ngrok PATH] [--agent DIR]...
       deskrelay doctor [--config FILE] [--cloudflared PATH]
       deskrelay devices [--port N]
       deskrelay devices revoke ID [--port N]
       deskrelay devices allow ID | deny ID [--port N]
       deskrelay pair [--port N]

  --port N           port to listen on (default 53210; 0 picks a free one)
  --host ADDR        address to bind (default 127.0.0.1; anything else is plain HTTP on your network)
  --config FILE      provider config (default <config dir>/config.json)
  --tunnel [KIND]    start a tunnel with your own agent and pair through it. KIND is one of
                       cloudflare-quick   cloudflared quick tunnel, a new URL every start (the default)
                       cloudflare-named   your named Cloudflare tunnel: --hostname and DESKRELAY_TUNNEL_TOKEN
                       tailscale-funnel   Tailscale Funnel (public HTTPS on your tailnet name)
                       tailscale-serve    Tailscale Serve (HTTPS inside your tailnet only)
                       ngrok              ngrok (authtoken from ngrok's config or NGROK_AUTHTOKEN;
                                          --hostname for your own ngrok domain)
  --hostname HOST    the public hostname of the named tunnel (or DESKRELAY_TUNNEL_HOSTNAME)
  --cloudflared PATH the cloudflared binary to use (default: CLOUDFLARED_BIN, then PATH)
  --tailscale PATH   the tailscale CLI to use (default: PATH)
  --ngrok PATH       the ngrok binary to use (default: PATH)
  --agent DIR        turn on the workspace agent in DIR (repeatable): the phone's model may read
                     and search it at once; every edit and command waits for your approval on
                     the phone (docs/agent.md). Config: "agent": {"folders": [...]}

deskrelay devices lists the phones paired as devices with the running relay (id, name, last seen,
connected); "deskrelay devices revoke ID" removes one: its token stops working and its open streams
end at once. --port names the relay's port when it is not 53210. "rememberDevices": true in
config.json (the default) keeps devices across restarts (salted hashes and public keys in
devices.json, never the tokens). "deskrelay devices allow ID" lets that phone use the agent
("deny" takes it back); "deskrelay pair" prints a one-time code (8 characters, 5 minutes) a phone
types to pair without the QR code. Both act as the desk through the running relay.

deskrelay doctor checks the config file, every provider (key set, reachable, key accepted, model
present), cloudflared and the token file, one line each; exit code 1 when a check fails.

The tunnel always forwards to the relay on loopback. Its agent runs with only PATH, HOME, the
proxy and certificate variables of your environment, plus what it is given on purpose (the named
tunnel's token from DESKRELAY_TUNNEL_TOKEN as TUNNEL_TOKEN, NGROK_AUTHTOKEN); name any other it
needs in DESKRELAY_TUNNEL_PASS_ENV (comma-separated).
`;

export type Command =
  | { command: 'serve'; args: ServeArgs }
  | { command: 'doctor'; args: DoctorArgs }
  | { command: 'devices'; args: DevicesArgs }
  | { command: 'help' }
  | { command: 'version' };

/** `--tunnel` alone means the quick tunnel; `--tunnel KIND` / `--tunnel=KIND` names one. */
function splitTunnel(rest: string[]): { args: string[]; tunnel: TunnelKind | undefined } {
  const args: string[] = [];
  let tunnel: TunnelKind | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const inline = /^--tunnel=(.*)$/.exec(arg);
    if (inline) {
      if (!isTunnelKind(inline[1])) throw new UsageError(`--tunnel must be one of ${TUNNEL_KINDS.join(', ')}, not "${inline[1]}"`);
      tunnel = inline[1];
    } else if (arg === '--tunnel') {
      const next = rest[i + 1];
      if (next !== undefined && !next.startsWith('-')) {
        if (!isTunnelKind(next)) throw new UsageError(`--tunnel must be one of ${TUNNEL_KINDS.join(', ')}, not "${next}"`);
        tunnel = next;
        i++;
      } else {
        tunnel = 'cloudflare-quick';
      }
    } else {
      args.push(arg);
    }
  }
  return { args, tunnel };
}

export function parseCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Command {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') return { command: 'help' };
  if (command === '--version' || command === '-v' || command === 'version') return { command: 'version' };
  if (command === 'doctor') return parseDoctor(rest);
  if (command === 'devices') return parseDevices(rest);
  if (command === 'pair') {
    const parsed = parseDevices(rest);
    if (parsed.command !== 'devices') return parsed;
    if (parsed.args.revoke !== undefined || parsed.args.agent !== undefined) throw new UsageError('"deskrelay pair" takes no device id');
    return { command: 'devices', args: { pair: true, port: parsed.args.port } };
  }
  if (command !== 'serve') throw new UsageError(`unknown command "${command}"; the commands are "deskrelay serve", "deskrelay doctor", "deskrelay devices" and "deskrelay pair"`);
  let values;
  let tunnel: TunnelKind | undefined;
  try {
    const split = splitTunnel(rest);
    tunnel = split.tunnel;
    ({ values } = parseArgs({
      args: split.args,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        config: { type: 'string' },
        cloudflared: { type: 'string' },
        tailscale: { type: 'string' },
        ngrok: { type: 'string' },
        hostname: { type: 'string' },
        agent: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return { command: 'help' };
  const agent = values.agent ?? [];
  if (agent.some((dir) => dir.trim() === '')) throw new UsageError('--agent needs a folder');
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) throw new UsageError(`--port must be a number from 0 to 65535, not "${values.port}"`);
  }
  if (values.host !== undefined && values.host.trim() === '') throw new UsageError('--host must not be empty');
  const hostname = values.hostname?.trim() || env.DESKRELAY_TUNNEL_HOSTNAME?.trim() || undefined;
  if (tunnel !== undefined && tunnelKindInfo(tunnel).needsHostname && !hostname) {
    throw new UsageError(`--tunnel ${tunnel} needs --hostname HOST (or DESKRELAY_TUNNEL_HOSTNAME): the public hostname your tunnel routes to DeskRelay`);
  }
  return {
    command: 'serve',
    args: {
      port,
      host: values.host,
      config: values.config,
      tunnel,
      cloudflared: values.cloudflared,
      tailscale: values.tailscale,
      ngrok: values.ngrok,
      hostname,
      agent,
    },
  };
}

function parseDoctor(rest: string[]): Command {
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: {
        config: { type: 'string' },
        cloudflared: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return { command: 'help' };
  return { command: 'doctor', args: { config: values.config, cloudflared: values.cloudflared } };
}

function parseDevices(rest: string[]): Command {
  let values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: true,
      options: { port: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return { command: 'help' };
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port < 1 || port > 65535) throw new UsageError(`--port must be a number from 1 to 65535, not "${values.port}"`);
  }
  const [action, id, ...extra] = positionals;
  if (action === undefined) return { command: 'devices', args: { port } };
  if (action !== 'revoke' && action !== 'allow' && action !== 'deny') {
    throw new UsageError(`unknown devices action "${action}"; use "deskrelay devices" to list, "deskrelay devices revoke ID" to remove one, "allow ID" / "deny ID" for the agent`);
  }
  if (id === undefined || id.trim() === '') throw new UsageError(`"deskrelay devices ${action}" needs the device id (the ID column of "deskrelay devices")`);
  if (extra.length) throw new UsageError(`"deskrelay devices ${action}" takes one device id, not ${1 + extra.length}`);
  if (action === 'revoke') return { command: 'devices', args: { revoke: id, port } };
  return { command: 'devices', args: { agent: { id, allowed: action === 'allow' }, port } };
}
