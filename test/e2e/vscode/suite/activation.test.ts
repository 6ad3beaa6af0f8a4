import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';

describe('activation', () => {
  it('the extension is present and activates', async () => {
    const ext = vscode.extensions.getExtension('deskrelay.deskrelay');
    assert.ok(ext, 'extension deskrelay.deskrelay not found');
    await ext.activate();
    assert.equal(ext.isActive, true);
  });
  it('sees the harness environment', () => {
    assert.ok(process.env.DESKRELAY_CONFIG_DIR, 'DESKRELAY_CONFIG_DIR not passed to the extension host');
  });
});
