import * as assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { EdgeAgent, fakeTunnelToken, isAlive, makeTls, NAMED_HOSTNAME, readInfo, TAILNET_HOST, type Tls } from '../../../tunnel/helpers';
import { api, extension, freePort, getViaTunnel, readToken, rememberSecret, setSetting, waitFor, type DeskRelayApi, type Status, run } from './helpers';

interface TailscaledModule {
  startTailscaled(o: { stateFile: string; infoFile: string; keyFile: string; certFile: string }): Promise<https.Server>;
  initialState(over?: object): Record<string, unknown>;
}

describe('lasting tunnels (stand-in tailscale and named cloudflared through Start Tunnel)', function () {
  this.timeout(60_000);
  let tls: Tls;
  let deskrelay: DeskRelayApi;
  let base: string;
  let edge: https.Server;
  let stateFile: string;
  let tailscaledInfo: string;
  let namedInfo: string;
  const fixture = (...p: string[]) => join(extension().extensionPath, 'test', 'fixtures', ...p);
  const state = () => JSON.parse(readFileSync(stateFile, 'utf8')) as Record<string, any>;
  const setState = (change: (s: Record<string, any>) => void) => {
    const s = state();
    change(s);
    writeFileSync(stateFile, JSON.stringify(s));
  };
  const standinKeys = [
    'STANDIN_TAILSCALE_STATE',
    'STANDIN_CLOUDFLARED_INFO',
    'STANDIN_CLOUDFLARED_TLS_KEY',
    'STANDIN_CLOUDFLARED_TLS_CERT',
    'STANDIN_CLOUDFLARED_NAMED_HOSTNAME',
    'STANDIN_CLOUDFLARED_NAMED_SERVICE',
    'STANDIN_CLOUDFLARED_DUMP_ENV',
  ];
  // The user's own Serve config: a dashboard on 443 that DeskRelay must leave alone.
  const theirs = { TCP: { '443': { HTTPS: true } }, Web: { [`${TAILNET_HOST}:443`]: { Handlers: { '/': { Proxy: 'http://127.0.0.1:3000' } } } } };

  before(async () => {
    deskrelay = await api();
    tls = makeTls();
    stateFile = join(tls.dir, 'tailscale-state.json');
    tailscaledInfo = join(tls.dir, 'tailscaled-info.json');
    namedInfo = join(tls.dir, 'named-info.json');
    const { startTailscaled, initialState } = require(fixture('tailscale', 'tailscaled.cjs')) as TailscaledModule;
    writeFileSync(stateFile, JSON.stringify(initialState({ serve: theirs })));
    edge = await startTailscaled({ stateFile, infoFile: tailscaledInfo, keyFile: tls.keyFile, certFile: tls.certFile });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    Object.assign(process.env, {
      DESKRELAY_TUNNEL_PASS_ENV: standinKeys.join(','),
      STANDIN_TAILSCALE_STATE: stateFile,
      STANDIN_CLOUDFLARED_INFO: namedInfo,
      STANDIN_CLOUDFLARED_TLS_KEY: tls.keyFile,
      STANDIN_CLOUDFLARED_TLS_CERT: tls.certFile,
      STANDIN_CLOUDFLARED_NAMED_HOSTNAME: NAMED_HOSTNAME,
      // The dashboard's route: the hostname to the relay's port.
      STANDIN_CLOUDFLARED_NAMED_SERVICE: `http://localhost:${port}`,
      STANDIN_CLOUDFLARED_DUMP_ENV: '1',
    });
    deskrelay.setTunnelProbe({ agent: new EdgeAgent(tailscaledInfo, tls.cert), intervalMs: 200 });
    await setSetting('port', port);
    await setSetting('tunnel.kind', 'tailscale-funnel');
    await setSetting('tailscalePath', fixture('tailscale', 'tailscale'));
    const s = await run<Status>('deskrelay.start');
    assert.equal(s.running, true);
  });

  after(async () => {
    await run('deskrelay.stop');
    deskrelay.setTunnelProbe(undefined);
    for (const k of [...standinKeys, 'DESKRELAY_TUNNEL_PASS_ENV']) delete process.env[k];
    await run('deskrelay.setTunnelToken', 'cloudflare-named', '');
    for (const k of ['tunnel.kind', 'tunnel.hostname', 'tailscalePath', 'ngrokPath', 'cloudflaredPath', 'port']) await setSetting(k, undefined);
    edge?.closeAllConnections();
    edge?.close();
    tls?.cleanup();
  });

  it('Tailscale Funnel: Start Tunnel publishes the relay on a free port, the pairing carries the tailnet URL and says it lasts', async () => {
    const url = await run<string>('deskrelay.startTunnel');
    assert.equal(url, `https://${TAILNET_HOST}:8443`);
    const s = deskrelay.status() as Status & { lastingUrl?: boolean; tunnelKind?: string };
    assert.equal(s.tunnel, 'up');
    assert.equal(s.tunnelKind, 'tailscale-funnel');
    assert.equal(s.lastingUrl, true);
    assert.deepEqual(state().serve.Web[`${TAILNET_HOST}:443`], theirs.Web[`${TAILNET_HOST}:443`]);
    assert.deepEqual(state().serve.Web[`${TAILNET_HOST}:8443`], { Handlers: { '/': { Proxy: base } } });
    const r = await run<{ url: string; viaTunnel: boolean }>('deskrelay.copyPairing');
    assert.deepEqual(r, { url, viaTunnel: true });
    const token = readToken()!;
    rememberSecret(token);
    const info = await getViaTunnel(url!, new EdgeAgent(tailscaledInfo, tls.cert), token);
    assert.equal(info.status, 200);
    assert.equal(info.body.service, 'deskrelay');
  });

  it('Rotate Token keeps the lasting URL: the phone only needs the new token', async () => {
    const before = readToken();
    await run('deskrelay.rotateToken');
    assert.notEqual(readToken(), before);
    rememberSecret(readToken()!);
    const r = await run<{ url: string; viaTunnel: boolean }>('deskrelay.copyPairing');
    assert.deepEqual(r, { url: `https://${TAILNET_HOST}:8443`, viaTunnel: true });
  });

  it('tailscaled going away is reported down, and up again at the same URL when it is back', async () => {
    setState((s) => {
      s.daemon = false;
    });
    await waitFor('the tunnel to go down', () => deskrelay.status().tunnel === 'down', 20_000);
    setState((s) => {
      s.daemon = true;
    });
    await waitFor('the tunnel to come back', () => deskrelay.status().tunnel === 'up', 20_000);
    assert.equal(deskrelay.status().tunnelUrl, `https://${TAILNET_HOST}:8443`);
  });

  it("Stop Tunnel removes only DeskRelay's handler", async () => {
    await run('deskrelay.stopTunnel');
    assert.equal(deskrelay.status().tunnel, 'stopped');
    assert.deepEqual(state().serve, theirs);
    assert.ok((state().calls as string[][]).some((c) => c.join(' ') === 'funnel --https=8443 off'));
  });

  it('named Cloudflare tunnel: the token from Set Tunnel Token reaches cloudflared in its environment only; restarts keep the URL', async () => {
    const token = fakeTunnelToken();
    rememberSecret(token);
    deskrelay.setTunnelProbe({ agent: new EdgeAgent(namedInfo, tls.cert), intervalMs: 200 });
    await setSetting('tunnel.kind', 'cloudflare-named');
    await setSetting('tunnel.hostname', NAMED_HOSTNAME);
    await setSetting('cloudflaredPath', fixture('cloudflared', 'cloudflared'));
    // Without a token: nothing starts.
    assert.equal(await run('deskrelay.startTunnel'), undefined);
    assert.equal(deskrelay.status().tunnel, 'stopped');
    assert.equal(await run('deskrelay.setTunnelToken', 'cloudflare-named', token), true);
    const url = await run<string>('deskrelay.startTunnel');
    assert.equal(url, `https://${NAMED_HOSTNAME}`);
    const info = readInfo(namedInfo);
    assert.equal(info.env!.TUNNEL_TOKEN, token);
    assert.ok(!info.argv.join(' ').includes(token), 'the token is not on the command line');
    assert.ok(!JSON.stringify(vscode.workspace.getConfiguration('deskrelay')).includes(token), 'the token is not in settings');
    await run('deskrelay.stopTunnel');
    await waitFor('cloudflared to exit', () => !isAlive(info.pid));
    assert.equal(await run<string>('deskrelay.startTunnel'), url);
    await run('deskrelay.stopTunnel');
  });

  it('Start Tunnel with ngrok missing returns nothing and starts nothing', async () => {
    await setSetting('tunnel.kind', 'ngrok');
    await setSetting('ngrokPath', join(extension().extensionPath, 'no-such-dir', 'ngrok'));
    assert.equal(await run('deskrelay.startTunnel'), undefined);
    assert.equal(deskrelay.status().tunnel, 'stopped');
    await setSetting('tunnel.kind', undefined);
  });
});
