import * as assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { startOllamaStandIn, type OllamaStandIn } from '../../../fixtures/providers/ollama';
import { api, freePort, readToken, rememberSecret, setSetting, waitFor, run } from './helpers';

describe('Conversations kept on the desktop in VS Code (issue 30)', function () {
  this.timeout(30_000);
  let base: string;
  let ollama: OllamaStandIn;
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${readToken()}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  before(async () => {
    await api();
    ollama = await startOllamaStandIn({ mode: 'normal', reply: ['Lisbon', ' is lovely.'] });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await run('deskrelay.stop');
    await setSetting('port', port);
    await setSetting('providers', [{ id: 'e2e-ollama', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' }]);
    await setSetting('activeProvider', 'e2e-ollama');
    await run('deskrelay.start');
    rememberSecret(readToken()!);
  });

  after(async () => {
    await run('deskrelay.stop');
    for (const key of ['port', 'providers', 'activeProvider', 'keepConversations']) await setSetting(key, undefined);
    await ollama?.close();
  });

  it('is off by default: the relay answers 403 conversations.disabled naming the setting, and the view says so', async () => {
    const res = await call('GET', '/v1/conversations');
    assert.equal(res.status, 403);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'conversations.disabled');
    assert.match(body.error.message, /deskrelay\.keepConversations/);
    assert.deepEqual(await (await api()).chats(), []);
  });

  it('with deskrelay.keepConversations on: a phone\'s chat is listed in DeskRelay Chats, opens in a panel, exports as Markdown, and a delete reaches it', async () => {
    await setSetting('keepConversations', true);
    const made = await call('POST', '/v1/conversations', { title: 'Trip' });
    assert.equal(made.status, 201);
    const { id } = (await made.json()) as { id: string };
    assert.equal((await call('POST', `/v1/conversations/${id}/messages`, { content: 'Where to?' })).status, 202);
    await waitFor('the reply kept', async () => ((await (await call('GET', `/v1/conversations/${id}`)).json()) as any).messages.length === 2 || undefined);

    const listed = await (await api()).chats();
    assert.deepEqual(listed.map((c) => [c.id, c.title, c.kind]), [[id, 'Trip', 'chat']]);

    // Kept in the extension's global storage, owner-only.
    const dir = (await api()).conversationsDir;
    assert.ok(existsSync(join(dir, `${id}.json`)), dir);
    assert.equal(statSync(join(dir, `${id}.json`)).mode & 0o777, 0o600);

    // Opening shows it in a webview panel titled after it.
    assert.equal(await run<string>('deskrelay.openConversation', id), 'Trip');
    await waitFor('the chat panel', () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.label === 'Trip'));

    // Export: a Markdown editor with the whole conversation.
    await run('deskrelay.exportConversation', id);
    const doc = await waitFor('the exported Markdown', () => (vscode.window.activeTextEditor?.document.languageId === 'markdown' ? vscode.window.activeTextEditor.document : undefined));
    assert.match(doc.getText(), /^# Trip/);
    assert.match(doc.getText(), /## You\n\nWhere to\?\n\n## Assistant\n\nLisbon is lovely\./);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');

    // Deleting from a phone removes it from the view and the disk.
    assert.equal((await call('DELETE', `/v1/conversations/${id}`)).status, 204);
    assert.deepEqual(await (await api()).chats(), []);
    assert.equal(readdirSync(dir).filter((n) => n.endsWith('.json')).length, 0);
  });
  it('the chat panel renders a reply\'s Markdown as the phone does, sanitised; the user\'s words stay text', async () => {
    await setSetting('keepConversations', true);
    const hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';
    ollama.set({ mode: 'normal', reply: ['**Lisbon** has `trams`.\n\n', '- Alfama\n- Belém\n\n', hostile, ' [map](javascript:alert(1))'] });
    const made = await call('POST', '/v1/conversations', { title: 'Markdown' });
    const { id } = (await made.json()) as { id: string };
    assert.equal((await call('POST', `/v1/conversations/${id}/messages`, { content: '**not bold**' })).status, 202);
    await waitFor('the reply kept', async () => ((await (await call('GET', `/v1/conversations/${id}`)).json()) as any).messages.length === 2 || undefined);

    assert.equal(await run<string>('deskrelay.openConversation', id), 'Markdown');
    const rendered = (pattern: RegExp) => waitFor(`the panel showing ${pattern}`, async () => {
      const html = await (await api()).renderedChat(id);
      return html && pattern.test(html) ? html : undefined;
    });
    const html = await rendered(/<strong>Lisbon<\/strong>/);
    assert.match(html, /<code>trams<\/code>/);
    assert.match(html, /<li>Alfama<\/li>/);
    assert.doesNotMatch(html, /<img|onerror|<script|href="javascript/i);
    // The user's message is their words, not Markdown.
    assert.match(html, /<div class="msg user">\*\*not bold\*\*<\/div>/);

    // A reply that arrives while the panel is open renders as it streams in.
    ollama.set({ mode: 'normal', reply: ['## Next', '\n\n1. Sintra'] });
    assert.equal((await call('POST', `/v1/conversations/${id}/messages`, { content: 'And then?' })).status, 202);
    const live = await rendered(/<h2[^>]*>Next<\/h2>\s*<ol>\s*<li>Sintra<\/li>/);
    assert.doesNotMatch(live, /<img|onerror|<script/i);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    assert.equal((await call('DELETE', `/v1/conversations/${id}`)).status, 204);
  });
});
