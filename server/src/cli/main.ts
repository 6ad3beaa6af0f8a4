import { readFileSync } from 'node:fs';
import { consoleLogger, type Logger } from '../logger';
import { isLoopbackUrl } from '../session/pairing';
import { configDir, standaloneConfigPath } from '../session/paths';
import { describeProvider } from '../providers';
import { DEFAULT_HOST, DEFAULT_PORT, RelayStartError } from '../session/relay';
import { RelaySession, type Pairing } from '../session/relaySession';
import { ConfigError, ConfigFile, envKeySource, noProviderNotice } from './config';
import { TunnelError, tunnelAgentFor, tunnelKindInfo, type TunnelKind } from '../tunnel';
import { parseCommand, type DoctorArgs, type ServeArgs, USAGE, UsageError } from './args';
import { detectDefaultRunner, DetectedDefaultSource } from './detect';
import { formatCheck, runDoctor } from './doctor';
import type { ProviderSource } from '../providers/types';
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import { commandEnv, findRipgrep, NodeWorkspace, type AgentHost } from '../agent';
import { McpServers } from '../agent/mcp/servers';
import { terminalQr } from './qr';
import { DevicesError, runDevices } from './devices';

/** The package version, read beside the bundle (dist/cli.js → package.json). */
function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(resolve(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

/** Start-up failures: exactly one line on stderr, exit code 1 (CONTRACT §7). */
function fail(message: string): never {
  process.stderr.write(`deskrelay: ${message}\n`);
  process.exit(1);
}

const out = (text = ''): void => void process.stdout.write(`${text}\n`);

/**
 * The pairing, on the user's terminal once and never into a log: what stands in the phone's way
 * first (a loopback address, and the tunnel hint), then, for an address a phone can reach, the
 * QR code its camera opens, then the link and the pairing JSON to paste instead. A loopback
 * address gets no QR code: scanned, it could only fail. `tunnelGiven`: --tunnel was asked for,
 * so it is not suggested.
 */
async function printPairing({ payload, link, url }: Pairing, tunnelGiven: boolean): Promise<void> {
  if (isLoopbackUrl(url)) {
    out(
      tunnelGiven
        ? `A phone cannot reach it: ${url} is this computer's loopback address, and the tunnel is not up.`
        : `A phone cannot reach it: ${url} is this computer's loopback address. Run with --tunnel for an address a phone can reach.`,
    );
    out('No QR code for it: a phone would open its own loopback address. Open this link in a browser on this computer (a secret: it carries the token):');
  } else {
    out("Scan with the phone's camera to open DeskRelay (a secret: the link carries the token):");
    out(await terminalQr(link));
  }
  out(link);
  out('Or paste this pairing JSON in the app (also a secret):');
  out(payload);
}

async function serve(args: ServeArgs, logger: Logger): Promise<void> {
  const explicitConfig = args.config !== undefined;
  const path = args.config ?? standaloneConfigPath(configDir());
  let config: ConfigFile;
  try {
    config = new ConfigFile(path, logger, explicitConfig);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  // No config file: the first local runner that answers stands in for the built-in default.
  let providers: ProviderSource = config;
  let detectNotice: string | undefined;
  if (!explicitConfig && !existsSync(path)) {
    const auto = await detectDefaultRunner(path);
    detectNotice = auto.notice;
    if (auto.detected) providers = new DetectedDefaultSource(config, auto.detected.config);
  }
  const host = args.host ?? DEFAULT_HOST;
  // The tunnel: --tunnel and --hostname, else the config file's "tunnel" (read at start).
  const tunnelKind = args.tunnel ?? config.current().tunnel?.kind;
  const hostname = args.hostname ?? config.current().tunnel?.hostname;
  const agent = agentHost(args, config, path, logger);
  // The same session the extension runs: relay, tunnel (always to loopback) and pairing.
  const session = new RelaySession({
    relay: () => ({
      host,
      port: args.port ?? DEFAULT_PORT,
      version: packageVersion(),
      providers,
      keys: envKeySource(),
      workspaces: () => config.current().workspaces,
      maxConcurrentStreams: () => config.current().maxConcurrentStreams,
      maxConnections: config.current().maxConnections,
      pushNotifications: () => config.current().pushNotifications,
      rememberDevices: config.current().rememberDevices,
      keepConversations: () => config.current().keepConversations,
      conversationsHowToEnable: `Turn it on at the desk: "keepConversations": true in ${path}.`,
      agent,
      logger,
      onRequestLog: (e) =>
        logger.info(`${e.method} ${e.path} ${e.status} ${e.durationMs}ms${e.provider ? ` provider=${e.provider}` : ''}${e.device ? ` device=${e.device}` : ''}`),
      onDeviceChange: (change) => {
        if (change.type === 'registered') out(`Device paired: ${change.device.name} (${change.device.id}). Remove it with: deskrelay devices revoke ${change.device.id}`);
        else if (change.type === 'replaced') out(`Device paired again: ${change.device.name} (${change.device.id}); its old token stopped.`);
        else if (change.type === 'agent-requested') {
          const { id, name } = change.device;
          out(`${name} (${id}) wants to use the agent in ${change.folders.join(', ')}. Allow: deskrelay devices allow ${id}   Deny: deskrelay devices deny ${id}`);
        } else if (change.type === 'agent') out(`${change.device.name} (${change.device.id}) ${change.device.agent === 'allowed' ? 'may now use the agent' : 'may not use the agent'}.`);
      },
    }),
    // Read at every tunnel start. Tokens come from the environment only, never from argv.
    tunnel: () =>
      tunnelAgentFor({
        kind: tunnelKind ?? 'cloudflare-quick',
        cloudflaredPath: args.cloudflared,
        tailscalePath: args.tailscale,
        ngrokPath: args.ngrok,
        hostname,
        token: tunnelToken(tunnelKind),
      }),
    logger,
  });

  // --tunnel without its program: stop here with the install steps, before any pairing is
  // printed that a phone could not use.
  if (tunnelKind !== undefined) {
    try {
      session.locateTunnelAgent();
    } catch (err) {
      if (err instanceof TunnelError) fail(`Tunnel not started: ${err.message}`);
      throw err;
    }
  }

  let started;
  try {
    started = await session.start();
  } catch (err) {
    if (err instanceof RelayStartError) fail(err.code === 'EADDRINUSE' ? `${err.message} Pass --port to pick another.` : err.message);
    throw err;
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: stopping`);
    await session.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  const url = started.url!;
  out(`DeskRelay ${packageVersion()} listening on ${url}`);
  if (detectNotice) out(detectNotice);
  const active = providers.active();
  out(active.ok ? `Active provider: ${active.config.id} (${describeProvider(active.config)})` : noProviderNotice(config.current(), config.path));
  for (const w of agent.workspaces()) out(`Workspace agent on in ${w.displayPath}: reads at once, edits and commands after your approval on the phone.`);
  if (host !== DEFAULT_HOST && !isLoopbackUrl(url)) {
    out(`Warning: listening on ${host}: traffic on your network is plain HTTP, readable by anyone on it. Prefer the tunnel.`);
  }
  // With --tunnel, the first pairing printed is the tunnel's (the loopback one only if it fails).
  if (tunnelKind !== undefined) await startTunnel(session);
  else await printPairing(session.pairing()!, false);
}

/**
 * The workspace agent's folders: `--agent DIR` (repeatable) and the config's "agent.folders"
 * (relative ones from the config file's folder), each checked to be a folder at start. Names are
 * the folders' base names, made unique.
 */
function agentHost(args: ServeArgs, config: ConfigFile, configPath: string, logger: Logger): AgentHost {
  const { folders, denyPaths } = config.current().agent;
  const dirs = [...args.agent.map((d) => resolve(d)), ...folders.map((d) => resolve(dirname(configPath), d.replace(/^~(?=$|[\\/])/, homedir())))];
  const seen = new Set<string>();
  const names = new Set<string>();
  const workspaces: NodeWorkspace[] = [];
  const keyNames = () => config.current().providers.flatMap((p) => (p.apiKeyEnv ? [p.apiKeyEnv] : []));
  // `rg` on PATH searches when there is one (gitignore-aware, parallel, off the relay's thread),
  // looked up at the first search; else the plain search.
  let rg: string | undefined | null = null;
  const ripgrep = () => (rg === null ? (rg = findRipgrep()) : rg);
  for (const dir of dirs) {
    if (seen.has(dir)) continue;
    seen.add(dir);
    let isDir = false;
    try {
      isDir = statSync(dir).isDirectory();
    } catch {
      // reported below
    }
    if (!isDir) fail(`--agent ${dir}: not a folder`);
    let name = basename(dir) || dir;
    for (let n = 2; names.has(name); n++) name = `${basename(dir)} (${n})`;
    names.add(name);
    workspaces.push(
      new NodeWorkspace({
        folder: dir,
        name,
        denyPaths,
        configDir: configDir(),
        protect: [configPath],
        keyNames,
        envRules: () => config.current().agent.env ?? {},
        ripgrep,
      }),
    );
  }
  const scrubbed = () => commandEnv(process.env, { keyNames: keyNames(), ...config.current().agent.env });
  // MCP servers start with the relay, in the background: one that fails is reported, never fatal.
  const servers = config.current().mcpServers;
  const mcp = servers && workspaces.length > 0
    ? new McpServers(servers, { env: scrubbed, cwd: workspaces[0]!.absolutePath, autoApprove: () => config.current().agent.autoApproveTools ?? [], logger, version: packageVersion() })
    : undefined;
  void mcp?.start();
  return {
    workspaces: () => workspaces,
    howToEnable: 'Start the desktop relay with `deskrelay serve --agent DIR` (or "agent": {"folders": [...]} in config.json).',
    approvals: () => config.current().agent.approvals,
    howToAllow: (id) => `At the desk, run: deskrelay devices allow ${id}`,
    acpAgents: () => config.current().agents ?? {},
    acpEnv: scrubbed,
    ...(mcp ? { tools: () => mcp.tools(), toolServers: () => mcp.status(), stop: () => mcp.close() } : {}),
  };
}

/** The secret a tunnel kind takes, from the environment: DESKRELAY_TUNNEL_TOKEN (or TUNNEL_TOKEN) for a named tunnel, NGROK_AUTHTOKEN for ngrok. */
function tunnelToken(kind: TunnelKind | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const name of kind ? (tunnelKindInfo(kind).secret?.env ?? []) : []) {
    const value = env[name]?.trim();
    if (value) return value;
  }
  return undefined;
}

/**
 * Starts the tunnel and prints the pairing payload again with the public URL, once that URL
 * really answers. A tunnel failure is reported, but the local relay keeps serving.
 */
async function startTunnel(session: RelaySession): Promise<void> {
  // Found before the relay started (serve); located again here for its title and path.
  const located = session.locateTunnelAgent();
  session.on('tunnel-progress', (message) => out(`Tunnel: ${message}`));
  let wasDown = false;
  session.on('tunnel-down', (message) => {
    wasDown = true;
    out(`Tunnel down: ${message}`);
  });
  session.on('tunnel-state', (state, url) => {
    // The agent reconnected by itself: same URL, the phone's pairing still holds.
    if (state === 'up' && wasDown && url) out(`Tunnel up again: ${url}`);
  });
  out(`Starting ${located.agent.title} (${located.program})…`);
  try {
    const url = await session.startTunnel();
    out(`Tunnel up: ${url}`);
    // Said before the pairing it is about (which a reader, or a script waiting for it, sees last).
    if (session.tunnel?.lastingUrl) out('This address lasts: after a restart of deskrelay serve the phone keeps the URL and only needs the new token.');
    const pairing = session.pairing();
    if (pairing) await printPairing(pairing, true);
  } catch (err) {
    if (!(err instanceof TunnelError)) throw err;
    out(`Tunnel not started: ${err.message}`);
    // Still usable from this computer (a browser here, or a phone on a reachable address).
    const pairing = session.pairing();
    if (pairing) await printPairing(pairing, true);
  }
}

/** One line per check; exit code 1 when any failed. */
async function doctor(args: DoctorArgs): Promise<void> {
  const checks = await runDoctor(args);
  for (const c of checks) out(formatCheck(c));
  const failed = checks.filter((c) => c.state === 'fail').length;
  out(failed ? `${failed} check${failed === 1 ? '' : 's'} failed.` : 'All checks passed.');
  if (failed) process.exitCode = 1;
}

async function main(argv: string[]): Promise<void> {
  let command;
  try {
    command = parseCommand(argv);
  } catch (err) {
    if (err instanceof UsageError) fail(`${err.message}. Run "deskrelay --help" for usage.`);
    throw err;
  }
  if (command.command === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  if (command.command === 'version') return out(packageVersion());
  if (command.command === 'doctor') return doctor(command.args);
  if (command.command === 'devices') {
    try {
      return await runDevices(command.args, out);
    } catch (err) {
      if (err instanceof DevicesError) fail(err.message);
      throw err;
    }
  }
  await serve(command.args, consoleLogger(process.stderr));
}

main(process.argv.slice(2)).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
