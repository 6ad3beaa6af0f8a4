import { readFileSync } from 'node:fs';
import { consoleLogger, type Logger } from '../logger';
import { isLoopbackUrl, LOOPBACK_WARNING } from '../session/pairing';
import { configDir, standaloneConfigPath } from '../session/paths';
import { describeProvider } from '../providers';
import { DEFAULT_HOST, DEFAULT_PORT, RelayStartError } from '../session/relay';
import { RelaySession, type Pairing } from '../session/relaySession';
import { ConfigError, ConfigFile, envKeySource, noProviderNotice } from './config';
import { TunnelError, tunnelAgentFor, type TunnelKind } from '../tunnel';
import { parseCommand, type DoctorArgs, type ServeArgs, USAGE, UsageError } from './args';
import { detectDefaultRunner, DetectedDefaultSource } from './detect';
import { formatCheck, runDoctor } from './doctor';
import type { ProviderSource } from '../providers/types';
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import { NodeWorkspace, type AgentHost } from '../agent';
import { terminalQr } from './qr';

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

/** The payload and its QR go to the user's terminal once, never into a log. */
async function printPairing({ payload, link, url }: Pairing): Promise<void> {
  out('Pairing JSON (a secret: whoever holds it can use your models):');
  out(payload);
  out(await terminalQr(payload));
  out("Open in the phone's browser (also a secret: the link carries the token):");
  out(link);
  out(await terminalQr(link));
  if (isLoopbackUrl(url)) out(`Note: ${LOOPBACK_WARNING} Run with --tunnel to start one.`);
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
  const agent = agentHost(args, config, path);
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
      agent,
      logger,
      onRequestLog: (e) =>
        logger.info(`${e.method} ${e.path} ${e.status} ${e.durationMs}ms${e.provider ? ` provider=${e.provider}` : ''}`),
    }),
    // Read at every tunnel start. Tokens come from the environment only, never from argv.
    tunnel: () =>
      tunnelAgentFor({
        kind: args.tunnel ?? 'cloudflare-quick',
        cloudflaredPath: args.cloudflared,
        tailscalePath: args.tailscale,
        ngrokPath: args.ngrok,
        hostname: args.hostname,
        token: tunnelToken(args.tunnel),
      }),
    logger,
  });

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
  await printPairing(session.pairing()!);
  if (args.tunnel) await startTunnel(session);
}

/**
 * The workspace agent's folders: `--agent DIR` (repeatable) and the config's "agent.folders"
 * (relative ones from the config file's folder), each checked to be a folder at start. Names are
 * the folders' base names, made unique.
 */
function agentHost(args: ServeArgs, config: ConfigFile, configPath: string): AgentHost {
  const { folders, denyPaths } = config.current().agent;
  const dirs = [...args.agent.map((d) => resolve(d)), ...folders.map((d) => resolve(dirname(configPath), d.replace(/^~(?=$|[\\/])/, homedir())))];
  const seen = new Set<string>();
  const names = new Set<string>();
  const workspaces: NodeWorkspace[] = [];
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
        keyNames: () => config.current().providers.flatMap((p) => (p.apiKeyEnv ? [p.apiKeyEnv] : [])),
      }),
    );
  }
  return {
    workspaces: () => workspaces,
    howToEnable: 'Start the desktop relay with `deskrelay serve --agent DIR` (or "agent": {"folders": [...]} in config.json).',
  };
}

/** The secret a tunnel kind takes, from the environment: DESKRELAY_TUNNEL_TOKEN (or TUNNEL_TOKEN) for a named tunnel, NGROK_AUTHTOKEN for ngrok. */
function tunnelToken(kind: TunnelKind | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (kind === 'cloudflare-named') return env.DESKRELAY_TUNNEL_TOKEN?.trim() || env.TUNNEL_TOKEN?.trim() || undefined;
  if (kind === 'ngrok') return env.NGROK_AUTHTOKEN?.trim() || undefined;
  return undefined;
}

/**
 * Starts the tunnel and prints the pairing payload again with the public URL, once that URL
 * really answers. A tunnel failure is reported, but the local relay keeps serving.
 */
async function startTunnel(session: RelaySession): Promise<void> {
  let located;
  try {
    located = session.locateTunnelAgent();
  } catch (err) {
    if (err instanceof TunnelError) {
      out(`Tunnel not started: ${err.message}`);
      return;
    }
    throw err;
  }
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
    if (pairing) await printPairing(pairing);
  } catch (err) {
    if (!(err instanceof TunnelError)) throw err;
    out(`Tunnel not started: ${err.message}`);
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
  await serve(command.args, consoleLogger(process.stderr));
}

main(process.argv.slice(2)).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
