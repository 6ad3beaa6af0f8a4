import * as assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import * as vscode from 'vscode';
import { startOllamaStandIn, type OllamaStandIn } from '../../../fixtures/providers/ollama';
import { startOpenAiStandIn, type OpenAiStandIn } from '../../../fixtures/providers/openai';
import { api, cfg, chat, extension, freePort, getInfo, portOpen, readToken, rememberSecret, reply, setSetting, tokenFile, waitFor, type Status, run } from './helpers';

const TOKEN = /^dr_[A-Za-z0-9_-]{43}$/;

describe('Remote Chat in VS Code', function () {
  this.timeout(30_000);
  let ollama: OllamaStandIn;
  let openai: OpenAiStandIn;
  let port: number;
  let base: string;

  before(async () => {
    await api();
    ollama = await startOllamaStandIn();
    openai = await startOpenAiStandIn();
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await setSetting('port', port);
    await setSetting('providers', [
      { id: 'ollama-standin', kind: 'ollama', baseUrl: ollama.url, model: 'auto' },
      { id: 'openai-standin', kind: 'openai-compatible', baseUrl: openai.url, model: 'gpt-standin' },
      { id: 'vendor-cloud', kind: 'cloud' },
    ]);
    await setSetting('activeProvider', 'ollama-standin');
  });

  after(async () => {
    await run('deskrelay.stop');
    for (const key of ['port', 'providers', 'activeProvider', 'cloudflaredPath', 'maxConcurrentStreams']) await setSetting(key, undefined);
    await ollama?.close();
    await openai?.close();
  });

  it('Start Remote Chat starts the relay on deskrelay.port with a fresh token file', async () => {
    const s = await run<Status>('deskrelay.start');
    assert.equal(s.running, true);
    assert.equal(s.port, port);
    assert.equal(s.url, base);
    assert.equal(JSON.stringify(s).includes('dr_'), false, 'the command result must not carry the token');
    const token = readToken();
    assert.match(token ?? '', TOKEN);
    rememberSecret(token!);
    assert.equal(statSync(tokenFile()).mode & 0o777, 0o600);
    assert.equal((await api()).status().running, true);
  });

  it('a second Start does not start a second server (same port, same token)', async () => {
    const before = readToken();
    const s = await run<Status>('deskrelay.start');
    assert.equal(s.port, port);
    assert.equal(readToken(), before);
  });

  it('two Starts at once (from stopped) start one server', async () => {
    await run('deskrelay.stop');
    const [a, b] = await Promise.all([run<Status>('deskrelay.start'), run<Status>('deskrelay.start')]);
    assert.equal(a.running && b.running, true);
    assert.equal(a.port, port);
    assert.equal(b.port, port);
    const token = readToken()!;
    rememberSecret(token);
    assert.equal((await getInfo(base, token)).status, 200);
  });

  it('serves /v1/health and /v1/remote/info with the extension version and the open workspace folders', async () => {
    const health = await (await fetch(`${base}/v1/health`)).json();
    assert.deepEqual(health, { status: 'ok', service: 'deskrelay', version: extension().packageJSON.version });
    const info = await getInfo(base, readToken());
    assert.equal(info.status, 200);
    assert.deepEqual(Object.keys(info.body).sort(), ['hostname', 'providerConfigured', 'service', 'version', 'workspaces']);
    assert.equal(info.body.service, 'deskrelay');
    assert.equal(info.body.version, extension().packageJSON.version);
    assert.equal(info.body.workspaces, vscode.workspace.workspaceFolders?.length ?? 0);
    assert.equal(info.body.workspaces, 1);
    assert.equal(info.body.providerConfigured, true);
    assert.equal((await getInfo(base, undefined)).body.error.code, 'auth.missing_token');
  });

  it('Copy Pairing JSON puts exactly {"url","token"} on the clipboard (local URL without a tunnel)', async () => {
    await vscode.env.clipboard.writeText('');
    const r = await run<{ url: string; viaTunnel: boolean }>('deskrelay.copyPairing');
    assert.deepEqual(r, { url: base, viaTunnel: false });
    const clip = await vscode.env.clipboard.readText();
    assert.equal(clip, `{"url":"${base}","token":"${readToken()}"}`);
    assert.deepEqual(Object.keys(JSON.parse(clip)), ['url', 'token']);
  });

  it('streams a chat through the active provider (Ollama stand-in)', async () => {
    const n = ollama.requests.length;
    const r = await chat(base, readToken()!);
    assert.equal(r.status, 200);
    assert.equal(reply(r), 'Hello from Ollama!');
    assert.equal(ollama.requests.filter((q) => q.path === '/api/chat').length, ollama.requests.slice(0, n).filter((q) => q.path === '/api/chat').length + 1);
  });

  it('changing deskrelay.activeProvider in settings switches the provider on the next message, without a restart', async () => {
    const token = readToken()!;
    const ollamaChats = () => ollama.requests.filter((q) => q.path === '/api/chat').length;
    const openaiChats = () => openai.requests.filter((q) => q.path === '/v1/chat/completions').length;
    const [o0, a0] = [ollamaChats(), openaiChats()];
    await setSetting('activeProvider', 'openai-standin');
    const r = await chat(base, token);
    assert.equal(reply(r), 'Hello from the server!');
    assert.equal(openaiChats(), a0 + 1);
    assert.equal(ollamaChats(), o0);
    assert.equal(readToken(), token, 'no restart: same token');
  });

  it('Select Provider with an id sets deskrelay.activeProvider, and the next message goes there', async () => {
    const id = await run<string>('deskrelay.selectProvider', 'ollama-standin');
    assert.equal(id, 'ollama-standin');
    assert.equal(cfg().get('activeProvider'), 'ollama-standin');
    assert.equal((await api()).status().activeProvider, 'ollama-standin');
    assert.equal(reply(await chat(base, readToken()!)), 'Hello from Ollama!');
  });

  it('Set Provider API Key stores the key in SecretStorage and the provider receives it as a bearer', async () => {
    const key = `sk-e2e-${Math.random().toString(36).slice(2)}`;
    rememberSecret(key);
    assert.equal(await run('deskrelay.setApiKey', 'openai-standin', key), true);
    await run('deskrelay.selectProvider', 'openai-standin');
    const r = await chat(base, readToken()!);
    assert.equal(reply(r), 'Hello from the server!');
    assert.equal(openai.requests.at(-1)?.headers.authorization, `Bearer ${key}`);
    // An empty key removes it: the next request carries none.
    assert.equal(await run('deskrelay.setApiKey', 'openai-standin', ''), true);
    await chat(base, readToken()!);
    assert.equal(openai.requests.at(-1)?.headers.authorization, undefined);
    // The key is in no setting.
    assert.equal(JSON.stringify(cfg().get('providers')).includes(key), false);
  });

  it('the cloud provider and a missing provider are refused with 412 chat.no_provider', async () => {
    await setSetting('activeProvider', 'vendor-cloud');
    let r = await chat(base, readToken()!);
    assert.equal(r.status, 412);
    assert.equal(r.body.error.code, 'chat.no_provider');
    assert.equal((await getInfo(base, readToken())).body.providerConfigured, false);
    await setSetting('activeProvider', 'no-such-provider');
    r = await chat(base, readToken()!);
    assert.equal(r.status, 412);
    await setSetting('activeProvider', 'ollama-standin');
  });

  it('deskrelay.maxConcurrentStreams is read per request', async () => {
    await setSetting('maxConcurrentStreams', 1);
    ollama.set({ mode: 'hang-after-headers' });
    const controller = new AbortController();
    const first = fetch(`${base}/v1/chat/stream`, {
      method: 'POST',
      signal: controller.signal,
      headers: { authorization: `Bearer ${readToken()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hold' }] }),
    });
    const firstRes = await first;
    assert.equal(firstRes.status, 200);
    const second = await chat(base, readToken()!);
    assert.equal(second.status, 429);
    assert.equal(second.body.error.code, 'chat.too_many_streams');
    controller.abort();
    await firstRes.body?.cancel().catch(() => {});
    ollama.set({});
    await setSetting('maxConcurrentStreams', undefined);
    await waitFor('the held stream to be released', async () => (await chat(base, readToken()!)).status === 200);
  });

  it('Show Pairing QR Code opens the pairing webview', async () => {
    await run('deskrelay.showPairing');
    const tab = await waitFor('the pairing panel tab', () =>
      vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.input instanceof vscode.TabInputWebview && t.label === 'DeskRelay Pairing'),
    );
    assert.match((tab.input as vscode.TabInputWebview).viewType, /deskrelay\.pairing/);
    await vscode.window.tabGroups.close(tab);
  });

  it('Rotate Token: the old token stops working at once, the new one works, same port', async () => {
    const old = readToken()!;
    const s = await run<Status>('deskrelay.rotateToken');
    const fresh = readToken()!;
    rememberSecret(fresh);
    assert.equal(s.running, true);
    assert.equal(s.port, port);
    assert.notEqual(fresh, old);
    assert.match(fresh, TOKEN);
    const stale = await getInfo(base, old);
    assert.equal(stale.status, 401);
    assert.equal(stale.body.error.code, 'auth.invalid_token');
    assert.equal((await getInfo(base, fresh)).status, 200);
    await run('deskrelay.copyPairing');
    assert.equal(JSON.parse(await vscode.env.clipboard.readText()).token, fresh);
  });

  it('Stop Remote Chat closes the port and removes the token file', async () => {
    const s = await run<Status>('deskrelay.stop');
    assert.equal(s.running, false);
    assert.equal(existsSync(tokenFile()), false);
    assert.equal(await portOpen(port), false);
    assert.equal(await run('deskrelay.copyPairing'), undefined, 'nothing to copy while stopped');
  });

  it('Start with the port in use fails with an error naming the port', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const busyPort = (busy.address() as { port: number }).port;
    try {
      await setSetting('port', busyPort);
      const s = await run<Status>('deskrelay.start');
      assert.equal(s.running, false);
      assert.match(s.error ?? '', new RegExp(`\\b${busyPort}\\b`));
      assert.match(s.error ?? '', /in use/);
      assert.equal(existsSync(tokenFile()), false);
    } finally {
      await new Promise((r) => busy.close(r));
      await setSetting('port', port);
    }
  });
});
