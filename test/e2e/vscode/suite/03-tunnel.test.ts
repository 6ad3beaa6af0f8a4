import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { EdgeAgent, isAlive, makeTls, readInfo, type Tls } from '../../../tunnel/helpers';
import { api, extension, freePort, getViaTunnel, readToken, setSetting, waitFor, type DeskRelayApi, type Status, run } from './helpers';

const TUNNEL_URL = /^https:\/\/[a-z0-9-]+\.trycloudflare\.com$/;

describe('tunnel (stand-in cloudflared through the tunnel module)', function () {
  this.timeout(60_000);
  let tls: Tls;
  let infoFile: string;
  let deskrelay: DeskRelayApi;
  let agent: EdgeAgent;
  let base: string;
  const standinKeys = ['STANDIN_CLOUDFLARED_MODE', 'STANDIN_CLOUDFLARED_INFO', 'STANDIN_CLOUDFLARED_TLS_KEY', 'STANDIN_CLOUDFLARED_TLS_CERT', 'STANDIN_CLOUDFLARED_DIE_AFTER_MS'];
  const envKeys = [...standinKeys, 'DESKRELAY_TUNNEL_PASS_ENV'];
  const standin = () => join(extension().extensionPath, 'test', 'fixtures', 'cloudflared', 'cloudflared');

  before(async () => {
    deskrelay = await api();
    tls = makeTls();
    infoFile = join(tls.dir, 'standin-info.json');
    // cloudflared gets the extension host's environment through DeskRelay's allow-list, which
    // passes the stand-in's own variables only when named in DESKRELAY_TUNNEL_PASS_ENV.
    Object.assign(process.env, {
      DESKRELAY_TUNNEL_PASS_ENV: standinKeys.join(','),
      STANDIN_CLOUDFLARED_MODE: 'normal',
      STANDIN_CLOUDFLARED_INFO: infoFile,
      STANDIN_CLOUDFLARED_TLS_KEY: tls.keyFile,
      STANDIN_CLOUDFLARED_TLS_CERT: tls.certFile,
    });
    agent = new EdgeAgent(infoFile, tls.cert);
    deskrelay.setTunnelProbe({ agent, intervalMs: 200 });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await setSetting('port', port);
    await setSetting('cloudflaredPath', standin());
    const s = await run<Status>('deskrelay.start');
    assert.equal(s.running, true);
  });

  after(async () => {
    await run('deskrelay.stop');
    deskrelay.setTunnelProbe(undefined);
    for (const k of envKeys) delete process.env[k];
    await setSetting('cloudflaredPath', undefined);
    await setSetting('port', undefined);
    tls?.cleanup();
  });

  it('Start Tunnel brings the quick tunnel up; Copy Pairing JSON then carries the tunnel URL', async () => {
    const url = await run<string>('deskrelay.startTunnel');
    assert.match(url ?? '', TUNNEL_URL);
    const s = deskrelay.status();
    assert.equal(s.tunnel, 'up');
    assert.equal(s.tunnelUrl, url);
    const argv = readInfo(infoFile).argv;
    assert.equal(argv[argv.indexOf('--url') + 1], base, 'cloudflared forwards to the relay');
    const r = await run<{ url: string; viaTunnel: boolean }>('deskrelay.copyPairing');
    assert.deepEqual(r, { url, viaTunnel: true });
    assert.equal(await vscode.env.clipboard.readText(), JSON.stringify({ url, token: readToken() }));
    const info = await getViaTunnel(url!, agent, readToken()!);
    assert.equal(info.status, 200);
    assert.equal(info.body.service, 'deskrelay');
    // A second Start Tunnel while up starts nothing new.
    assert.equal(await run<string>('deskrelay.startTunnel'), url);
  });

  it('Stop Tunnel stops cloudflared, and pairing falls back to the local URL', async () => {
    const pid = readInfo(infoFile).pid;
    await run('deskrelay.stopTunnel');
    assert.equal(deskrelay.status().tunnel, 'stopped');
    await waitFor('cloudflared to exit', () => !isAlive(pid));
    const r = await run<{ url: string; viaTunnel: boolean }>('deskrelay.copyPairing');
    assert.deepEqual(r, { url: base, viaTunnel: false });
  });

  it('a tunnel whose cloudflared dies is reported down; Start Tunnel restarts it with a new cloudflared', async () => {
    process.env.STANDIN_CLOUDFLARED_MODE = 'die-later';
    process.env.STANDIN_CLOUDFLARED_DIE_AFTER_MS = '1000';
    const first = await run<string>('deskrelay.startTunnel');
    assert.match(first ?? '', TUNNEL_URL);
    const firstPid = readInfo(infoFile).pid;
    await waitFor('the tunnel to go down', () => deskrelay.status().tunnel === 'down', 20_000);
    assert.equal(deskrelay.status().tunnelUrl, undefined);
    process.env.STANDIN_CLOUDFLARED_MODE = 'normal';
    const second = await run<string>('deskrelay.startTunnel');
    assert.match(second ?? '', TUNNEL_URL);
    assert.notEqual(readInfo(infoFile).pid, firstPid);
    assert.equal(deskrelay.status().tunnel, 'up');
  });

  it('Stop Remote Chat stops the tunnel too', async () => {
    const pid = readInfo(infoFile).pid;
    await run('deskrelay.stop');
    assert.equal(deskrelay.status().tunnel, 'stopped');
    await waitFor('cloudflared to exit', () => !isAlive(pid));
    await run('deskrelay.start');
  });

  it('Start Tunnel without cloudflared returns nothing (and offers Install cloudflared)', async () => {
    await setSetting('cloudflaredPath', join(extension().extensionPath, 'no-such-dir', 'cloudflared'));
    assert.equal(await run('deskrelay.startTunnel'), undefined);
    assert.equal(deskrelay.status().tunnel, 'stopped');
    await setSetting('cloudflaredPath', standin());
  });
});
