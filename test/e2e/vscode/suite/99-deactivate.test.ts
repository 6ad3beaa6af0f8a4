import * as assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { api, extension, freePort, portOpen, readToken, rememberSecret, setSetting, tokenFile, type Status } from './helpers';

// Last: it deactivates the extension the way VS Code does on shutdown (calls the module's deactivate()).
describe('deactivate', () => {
  it('stops the server: the token file is removed and the port is closed', async () => {
    await api();
    const port = await freePort();
    await setSetting('port', port);
    try {
      const s = await vscode.commands.executeCommand<Status>('deskrelay.start');
      assert.equal(s.running, true);
      rememberSecret(readToken()!);
      assert.equal(existsSync(tokenFile()), true);
      assert.equal(await portOpen(port), true);
      // The very module instance VS Code loaded (Node's module cache), so this is its deactivate().
      const main = join(extension().extensionPath, extension().packageJSON.main);
      const mod = require(main) as { deactivate(): Promise<void> };
      await mod.deactivate();
      assert.equal(existsSync(tokenFile()), false);
      assert.equal(await portOpen(port), false);
    } finally {
      await setSetting('port', undefined);
    }
  });
});
