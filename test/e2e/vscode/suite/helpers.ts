// Shared by the suite's test files (each test file is bundled with its own copy).
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import * as vscode from 'vscode';

export { freePort, portOpen } from '../net';

export const EXTENSION_ID = 'deskrelay.deskrelay';

/** Runs a VS Code command (ours or the editor's) and resolves with what it returns. */
export const run = <T = unknown>(command: string, ...args: unknown[]) => vscode.commands.executeCommand<T>(command, ...args);

export interface Status {
  running: boolean;
  url?: string;
  port?: number;
  tunnel: string;
  tunnelUrl?: string;
  activeProvider: string;
  providerReady: boolean;
  error?: string;
}

export interface DeskRelayApi {
  status(): Status;
  setTunnelProbe(probe: unknown): void;
  chats(): Promise<{ id: string; title: string; kind: string }[]>;
  conversationsDir: string;
  /** An open chat panel's messages as its webview shows them (HTML). */
  renderedChat(id: string): Promise<string> | undefined;
  /** A DeskRelay Chats row as VS Code shows it. */
  chatItem(id: string): Promise<vscode.TreeItem | undefined>;
  /** Answers DeskRelay's device notifications (a phone asking for the agent) with the button returned. */
  answerDeviceNotifications(answer: (message: string, buttons: string[]) => string | undefined): void;
}

export function extension(): vscode.Extension<DeskRelayApi> {
  const ext = vscode.extensions.getExtension<DeskRelayApi>(EXTENSION_ID);
  if (!ext) throw new Error(`extension ${EXTENSION_ID} is not loaded`);
  return ext;
}

export async function api(): Promise<DeskRelayApi> {
  return extension().activate();
}

export const cfg = () => vscode.workspace.getConfiguration('deskrelay');

export async function setSetting(key: string, value: unknown): Promise<void> {
  await cfg().update(key, value, vscode.ConfigurationTarget.Global);
}

export function configDir(): string {
  const dir = process.env.DESKRELAY_CONFIG_DIR;
  if (!dir) throw new Error('DESKRELAY_CONFIG_DIR is not set: the suite must not touch the real config');
  return dir;
}

export const tokenFile = () => join(configDir(), 'token');

export function readToken(): string | undefined {
  return existsSync(tokenFile()) ? readFileSync(tokenFile(), 'utf8').trim() : undefined;
}

/** Remembers a secret the suite saw, so the launcher can check that no VS Code log holds it. */
export function rememberSecret(secret: string): void {
  const file = process.env.DESKRELAY_E2E_SECRETS;
  if (file && secret) appendFileSync(file, `${secret}\n`);
}

export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function getInfo(baseUrl: string, token: string | undefined): Promise<{ status: number; body: any }> {
  const res = await fetch(`${baseUrl}/v1/remote/info`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
}

/** GET /v1/remote/info through a stand-in edge (`agent`), the way a phone reaches the tunnel URL. */
export function getViaTunnel(url: string, agent: https.Agent, token: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    https
      .get(new URL('/v1/remote/info', url), { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      })
      .on('error', reject);
  });
}

export interface ChatResult {
  status: number;
  contentType: string | null;
  events: any[];
  body: any;
}

/** POST /v1/chat/stream and read the whole SSE body (the server ends it after the terminal event). */
export async function chat(baseUrl: string, token: string, text = 'hi'): Promise<ChatResult> {
  const res = await fetch(`${baseUrl}/v1/chat/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ messages: [{ role: 'user', content: text }] }),
  });
  const raw = await res.text();
  const contentType = res.headers.get('content-type');
  if (!contentType?.startsWith('text/event-stream')) return { status: res.status, contentType, events: [], body: JSON.parse(raw) };
  const events = raw
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => JSON.parse(block.slice('data: '.length)));
  return { status: res.status, contentType, events, body: undefined };
}

/** The reply a stream assembled, checking the terminal rule on the way. */
export function reply(r: ChatResult): string {
  const last = r.events.at(-1);
  if (!last || last.type !== 'done') throw new Error(`stream did not end with done: ${JSON.stringify(r.events)}`);
  const deltas = r.events.slice(0, -1).map((e) => e.delta).join('');
  if (deltas !== last.content) throw new Error('done.content is not the concatenation of the deltas');
  return last.content;
}
