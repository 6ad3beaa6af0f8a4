import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { configDir, deskTokenPath, tokenPath } from '../session/paths';
import { DEFAULT_HOST, DEFAULT_PORT } from '../session/relay';
import { devicesPath } from '../store/devices';
import { PATHS, pathTo, type DeviceInfo } from '../protocol';
import type { DevicesArgs } from './args';


/** A failure worth one line on stderr and exit code 1. */
export class DevicesError extends Error {}

interface Answer {
  status: number;
  json: unknown;
}

/** One request to the running relay on loopback, with the pairing token from its token file. */
function ask(port: number, token: string, method: 'GET' | 'DELETE' | 'POST' | 'PUT', path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    if (text !== undefined) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
    const req = request({ host: DEFAULT_HOST, port, method, path, headers, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('error', reject);
      res.on('end', () => {
        let json: unknown;
        try {
          json = body === '' ? undefined : JSON.parse(body);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(text);
  });
}

const errorMessage = (json: unknown): string => {
  const error = (json as { error?: { message?: unknown } } | undefined)?.error;
  return typeof error?.message === 'string' ? error.message : 'no error message';
};

function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}

/** The table `deskrelay devices` prints: id, name, last seen, connected, agent access. */
export function formatDevices(devices: readonly DeviceInfo[], now = Date.now()): string[] {
  if (devices.length === 0) return ['No devices are paired.'];
  const idWidth = Math.max(2, ...devices.map((d) => d.id.length));
  const nameWidth = Math.max(4, ...devices.map((d) => d.name.length));
  const row = (id: string, name: string, seen: string, connected: string, agent: string) => `${id.padEnd(idWidth)}  ${name.padEnd(nameWidth)}  ${seen.padEnd(12)}  ${connected.padEnd(9)}  ${agent}`;
  const agent = (d: DeviceInfo) => (d.agent === true ? 'allowed' : d.agent === 'pending' ? 'asks (deskrelay devices allow)' : 'no');
  return [row('ID', 'NAME', 'LAST SEEN', 'CONNECTED', 'AGENT'), ...devices.map((d) => row(d.id, d.name, ago(d.lastSeen, now), d.connected ? 'yes' : 'no', agent(d)))];
}

/**
 * Lists or removes devices through the running relay (the only one who knows them, and who can
 * end a removed device's streams at once). With no relay running, the remembered devices are
 * shown from devices.json; removing one then waits for the relay, which owns that file.
 */
export async function runDevices(args: DevicesArgs, out: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const dir = configDir(env);
  const port = args.port ?? DEFAULT_PORT;
  const tokenFile = tokenPath(dir);
  if (!existsSync(tokenFile)) {
    if (args.pair || args.agent) throw new DevicesError('DeskRelay is not running: start it (deskrelay serve, or Remote Chat in VS Code) first; only the running relay can do that');
    if (args.revoke !== undefined) throw new DevicesError('DeskRelay is not running: start it (deskrelay serve, or Remote Chat in VS Code) to remove a device; a removed device is cut off at once only by the running relay');
    out('DeskRelay is not running.');
    const remembered = rememberedDevices(devicesPath(dir));
    if (remembered === undefined) out('No devices are remembered ("rememberDevices" is off, or none was paired).');
    else for (const line of formatDevices(remembered)) out(line);
    return;
  }
  // The desk's own actions take the desk token (a 0600 file beside the token): the pairing token cannot allow a device the agent.
  const desk = args.pair || args.agent !== undefined;
  const token = readFileSync(desk ? deskTokenPath(dir) : tokenFile, 'utf8').trim();
  let answer: Answer;
  try {
    if (args.pair) answer = await ask(port, token, 'POST', PATHS.deviceCodes);
    else if (args.agent) answer = await ask(port, token, 'PUT', pathTo(PATHS.deviceAgent, { id: args.agent.id }), { allowed: args.agent.allowed });
    else if (args.revoke !== undefined) answer = await ask(port, token, 'DELETE', pathTo(PATHS.device, { id: args.revoke }));
    else answer = await ask(port, token, 'GET', PATHS.devices);
  } catch (err) {
    throw new DevicesError(
      `DeskRelay's token file exists, but nothing answers on ${DEFAULT_HOST}:${port} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); pass --port with the port the relay listens on`,
    );
  }
  if (answer.status === 401) throw new DevicesError(`the relay on ${DEFAULT_HOST}:${port} did not accept the token in ${tokenFile}; pass --port with the port of the relay that wrote it`);
  if (args.pair) {
    const code = answer.json as { code?: string; expiresAt?: string } | undefined;
    if (answer.status !== 201 || typeof code?.code !== 'string') throw new DevicesError(`the relay answered ${answer.status}: ${errorMessage(answer.json)}`);
    out(`Pairing code: ${code.code}`);
    out(`Type it on the phone (DeskRelay app: Enter a pairing code) before ${new Date(code.expiresAt ?? '').toLocaleTimeString()}; it works once, for 5 minutes.`);
    return;
  }
  if (args.agent) {
    if (answer.status !== 200) throw new DevicesError(errorMessage(answer.json));
    const { name } = answer.json as DeviceInfo;
    out(args.agent.allowed ? `${name} (${args.agent.id}) may now use the agent; its decisions are signed with its key.` : `${name} (${args.agent.id}) may not use the agent.`);
    return;
  }
  if (args.revoke !== undefined) {
    if (answer.status !== 204) throw new DevicesError(errorMessage(answer.json));
    out(`Removed ${args.revoke}: its token no longer works, and its open streams were ended.`);
    return;
  }
  if (answer.status !== 200 || !Array.isArray(answer.json)) throw new DevicesError(`the relay answered ${answer.status}: ${errorMessage(answer.json)}`);
  for (const line of formatDevices(answer.json as DeviceInfo[])) out(line);
}

/** The devices devices.json remembers (not connected: no relay runs), or undefined when there is no file. */
function rememberedDevices(file: string): DeviceInfo[] | undefined {
  let json: { devices?: { id: string; name: string; createdAt: string; lastSeen: string; publicKey?: unknown; agent?: string }[] };
  try {
    json = JSON.parse(readFileSync(file, 'utf8')) as typeof json;
  } catch {
    return undefined;
  }
  return (json.devices ?? []).map((d) => ({ id: d.id, name: d.name, createdAt: d.createdAt, lastSeen: d.lastSeen, connected: false, current: false, hasKey: d.publicKey !== undefined, agent: d.agent === 'allowed' }));
}
