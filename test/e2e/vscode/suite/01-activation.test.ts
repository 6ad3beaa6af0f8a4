import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { api, cfg, extension } from './helpers';

const COMMANDS: Record<string, string> = {
  'deskrelay.start': 'Start Remote Chat',
  'deskrelay.stop': 'Stop Remote Chat',
  'deskrelay.copyPairing': 'Copy Pairing JSON',
  'deskrelay.showPairing': 'Show Pairing QR Code',
  'deskrelay.startTunnel': 'Start Tunnel',
  'deskrelay.stopTunnel': 'Stop Tunnel',
  'deskrelay.selectProvider': 'Select Provider',
  'deskrelay.setApiKey': 'Set Provider API Key',
  'deskrelay.rotateToken': 'Rotate Token',
  'deskrelay.manageDevices': 'Manage Devices',
  'deskrelay.forgetDevices': 'Forget All Devices',
  'deskrelay.showLog': 'Show Log',
};

describe('activation', () => {
  it('activates in the real extension host and reports a stopped relay', async () => {
    const ext = extension();
    const deskrelay = await api();
    assert.equal(ext.isActive, true);
    const s = deskrelay.status();
    assert.equal(s.running, false);
    assert.equal(s.tunnel, 'stopped');
  });

  it('contributes every command, titled exactly, in category DeskRelay, and registers it', async () => {
    const contributed = extension().packageJSON.contributes.commands as { command: string; title: string; category: string }[];
    for (const [id, title] of Object.entries(COMMANDS)) {
      const c = contributed.find((x) => x.command === id);
      assert.ok(c, `${id} not contributed`);
      assert.equal(c.title, title);
      assert.equal(c.category, 'DeskRelay');
    }
    const registered = new Set(await vscode.commands.getCommands(true));
    for (const id of Object.keys(COMMANDS)) assert.ok(registered.has(id), `${id} not registered`);
  });

  it('offers Start only when stopped and Stop only when running (when clauses)', () => {
    const menus = extension().packageJSON.contributes.menus.commandPalette as { command: string; when: string }[];
    const when = (id: string) => menus.find((m) => m.command === id)?.when;
    assert.equal(when('deskrelay.start'), '!deskrelay.running');
    assert.equal(when('deskrelay.stop'), 'deskrelay.running');
    assert.match(when('deskrelay.stopTunnel') ?? '', /deskrelay\.tunnel/);
  });

  it('has the walkthrough from install to a paired phone, its strings localized', () => {
    const [w] = extension().packageJSON.contributes.walkthroughs as { title: string; steps: { id: string; title: string; description: string }[] }[];
    assert.deepEqual(w.steps.map((s) => s.id), ['start', 'provider', 'tunnel', 'scan']);
    assert.equal(w.title, 'Chat from your phone with DeskRelay');
    for (const s of w.steps) assert.doesNotMatch(`${s.title} ${s.description}`, /%walkthrough\./);
  });

  it('has the settings with their defaults', () => {
    const d = <T>(key: string) => cfg().inspect<T>(key)?.defaultValue;
    assert.equal(d('port'), 53210);
    assert.equal(d('bindAddress'), '127.0.0.1');
    assert.deepEqual(d('providers'), [{ id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:11434', model: 'auto' }]);
    assert.equal(d('activeProvider'), 'local');
    assert.equal(d('autoStart'), false);
    assert.equal(d('maxConcurrentStreams'), 8);
    assert.equal(d('cloudflaredPath'), '');
  });

  it('runs with DESKRELAY_CONFIG_DIR pointing at a temp dir', () => {
    assert.ok(process.env.DESKRELAY_CONFIG_DIR && /deskrelay/.test(process.env.DESKRELAY_CONFIG_DIR));
  });
});
