import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { freePort, readToken, rememberSecret, setSetting, type Status, run } from './helpers';

/**
 * Only under `run-e2e.mjs --untrusted` (restricted mode): the relay still runs, but the
 * workspace agent stays off even with its setting on.
 */
describe('The workspace agent in an untrusted workspace', function () {
  this.timeout(30_000);
  let base: string;
  let token: string;

  before(async function () {
    if (!process.env.DESKRELAY_E2E_UNTRUSTED) return this.skip();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await setSetting('port', port);
    const s = await run<Status>('deskrelay.start');
    assert.equal(s.running, true);
    token = readToken()!;
    rememberSecret(token);
  });

  after(async () => {
    if (!process.env.DESKRELAY_E2E_UNTRUSTED) return;
    await run('deskrelay.stop');
    for (const key of ['port', 'agent.enabled']) await setSetting(key, undefined);
  });

  it('is refused (403 agent.disabled) even with deskrelay.agent.enabled on', async () => {
    assert.equal(vscode.workspace.isTrusted, false);
    await setSetting('agent.enabled', true);
    const reply = await fetch(`${base}/v1/agent/folders`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(reply.status, 403);
    const body = (await reply.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'agent.disabled');
    assert.match(body.error.message, /trusted workspace/);
  });
});
