import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { startScriptedModel, toolResults, type ScriptedModel } from '../../../fixtures/providers/scripted';
import { alive } from '../../../helpers/process';
import { api, freePort, readToken, rememberSecret, setSetting, waitFor, type Status, run } from './helpers';
import { actAs, decideAs, registerDevice, signAction, type TestDevice } from '../../../helpers/devices';

/**
 * The workspace agent inside a real VS Code (issue 23): off until the user's setting, then the
 * same door as the CLI with VS Code's own host: unsaved editor text is what the model reads, an
 * approved edit is a WorkspaceEdit the user can undo, a command runs in the "DeskRelay Agent"
 * terminal, diagnostics are the Problems list.
 */
describe('The workspace agent in VS Code', function () {
  this.timeout(60_000);
  let model: ScriptedModel;
  let base: string;
  let token: string;
  let phone: TestDevice;
  let folder: string;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
  const snapshot = async (id: string) => (await call('GET', `/v1/agent/sessions/${id}`)).json;
  const start = async (prompt: string) => {
    const created = await call('POST', '/v1/agent/sessions', { prompt });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    return created.json.id as string;
  };
  const pending = (id: string) => waitFor('an approval', async () => (await snapshot(id)).pending[0], 20_000);
  const idle = (id: string) => waitFor('the turn to end', async () => ((await snapshot(id)).status === 'idle' ? true : undefined), 30_000);
  const lastResult = (body: { messages: any[] }) => toolResults(body).at(-1)!.content;
  const failures = () => assert.deepEqual(model.failures, []);
  /** The phone's decision, signed with its key (issue 36). */
  const decide = async (id: string, callId: string, decision: string, extra: Record<string, unknown> = {}) => {
    const reply = await decideAs({ url: base }, phone, id, callId, decision, {}, extra);
    return { status: reply.status, json: reply.json };
  };
  const desk = async () => (await api() as unknown as { agentDesk: any }).agentDesk;
  /** What a webview shows, once `check` holds. */
  const shown = (panel: any, what: string, check: (html: string) => boolean): Promise<string> =>
    waitFor(what, async () => {
      const html: string = await panel.rendered();
      return check(html) ? html : undefined;
    });
  /** The phone following a session's events (the POST form of the stream). */
  const follow = async (id: string) => {
    const phone = new AbortController();
    const events: any[] = [];
    const res = await fetch(`${base}/v1/agent/sessions/${id}/events`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: phone.signal });
    assert.equal(res.status, 200);
    void (async () => {
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += value;
          let at: number;
          while ((at = buffer.indexOf('\n\n')) >= 0) {
            const data = buffer.slice(0, at).split('\n').find((l) => l.startsWith('data: '));
            buffer = buffer.slice(at + 2);
            if (data) events.push(JSON.parse(data.slice(6)));
          }
        }
      } catch {
        /* aborted at the end */
      }
    })();
    return { events, stop: () => phone.abort() };
  };
  /** The diff editors open now (any tab group), by the scheme of their right side. */
  const diffTabs = (scheme: string) =>
    vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === scheme);
  const diffTexts = async (tab: vscode.Tab) => {
    const input = tab.input as vscode.TabInputTextDiff;
    return [(await vscode.workspace.openTextDocument(input.original)).getText(), (await vscode.workspace.openTextDocument(input.modified)).getText()];
  };
  const closeDiffs = async () => {
    await vscode.window.tabGroups.close(vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputTextDiff));
  };
  const appliedCalls = async (id: string) => (await snapshot(id)).transcript.filter((t: any) => t.role === 'tool' && t.diff).map((t: any) => t.callId as string);

  before(async () => {
    model = await startScriptedModel();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    await setSetting('port', port);
    await setSetting('providers', [{ id: 'scripted', kind: 'openai-compatible', baseUrl: `${model.url}/v1`, model: 'gpt-4o' }]);
    await setSetting('activeProvider', 'scripted');
    const s = await run<Status>('deskrelay.start');
    assert.equal(s.running, true);
    rememberSecret(readToken()!);
    // Only a phone allowed at the desk drives the agent (issue 36).
    phone = await registerDevice({ url: base, token: readToken()! }, 'Agent phone');
    rememberSecret(phone.token);
    assert.equal(await run('deskrelay.manageDevices', { id: phone.id, action: 'allow' }), phone.id);
    token = phone.token;
  });

  after(async () => {
    // Devices are remembered by default: the next suite starts with none.
    await run('deskrelay.forgetDevices', true);
    await run('deskrelay.stop');
    for (const key of ['port', 'providers', 'activeProvider', 'agent.enabled', 'keepConversations', 'agent.acpAgents']) await setSetting(key, undefined);
    await model?.close();
  });

  it('is off by default: 403 agent.disabled naming the setting', async () => {
    const reply = await call('GET', '/v1/agent/folders');
    assert.equal(reply.status, 403);
    assert.equal(reply.json.error.code, 'agent.disabled');
    assert.match(reply.json.error.message, /deskrelay\.agent\.enabled/);
  });

  it('the user setting turns it on for the open folder (a trusted workspace)', async () => {
    assert.equal(vscode.workspace.isTrusted, true);
    await setSetting('agent.enabled', true);
    const reply = await call('GET', '/v1/agent/folders');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.json.folders.map((f: any) => f.name), [vscode.workspace.workspaceFolders![0]!.name]);
  });

  it('a phone asking for the agent: the desk is asked "<name> wants to use the agent in <folder>", and Allow lets it in', async () => {
    const asked: string[] = [];
    (await api()).answerDeviceNotifications((message, buttons) => {
      asked.push(message);
      return buttons.find((b) => b === 'Allow');
    });
    const tablet = await registerDevice({ url: base, token: readToken()! }, 'iPad Safari');
    rememberSecret(tablet.token);
    const folders = () => fetch(`${base}/v1/agent/folders`, { headers: { authorization: `Bearer ${tablet.token}` } });
    const first = await folders();
    assert.equal(first.status, 403);
    assert.equal(((await first.json()) as any).error.code, 'agent.device_not_allowed');
    await waitFor('the desk to allow it', async () => ((await folders()).status === 200 ? true : undefined));
    assert.deepEqual(asked, [`iPad Safari wants to use the agent in ${vscode.workspace.workspaceFolders![0]!.name}.`]);
    // The pairing token never reaches the agent.
    assert.equal((await fetch(`${base}/v1/agent/folders`, { headers: { authorization: `Bearer ${readToken()}` } })).status, 403);
    // Manage Devices takes it back, and gives it again.
    assert.equal(await run('deskrelay.manageDevices', { id: tablet.id, action: 'deny' }), tablet.id);
    assert.equal((await folders()).status, 403);
    assert.equal(await run('deskrelay.manageDevices', { id: tablet.id, action: 'allow' }), tablet.id);
    assert.equal((await folders()).status, 200);
    assert.equal(await run('deskrelay.manageDevices', tablet.id), tablet.id);
  });

  it('reads what the editor shows, unsaved text included', async () => {
    writeFileSync(join(folder, 'notes.txt'), 'saved line\n');
    const doc = await vscode.workspace.openTextDocument(join(folder, 'notes.txt'));
    const editor = await vscode.window.showTextDocument(doc);
    await editor.edit((b) => b.insert(new vscode.Position(1, 0), 'unsaved line\n'));
    assert.equal(doc.isDirty, true);
    model.script([
      { calls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] },
      { check: (body) => assert.equal(lastResult(body), 'notes.txt (lines 1-2 of 2)\n1: saved line\n2: unsaved line'), text: ['read'] },
    ]);
    await idle(await start('read notes'));
    failures();
    await run('workbench.action.files.revert');
    await run('workbench.action.closeActiveEditor');
  });

  it('an approved edit is a WorkspaceEdit, saved, that Undo takes back', async () => {
    mkdirSync(join(folder, 'src'), { recursive: true });
    writeFileSync(join(folder, 'src', 'math.js'), 'export const add = (a, b) => a - b;\n');
    model.script([
      { calls: [{ name: 'edit_file', arguments: { path: 'src/math.js', old: 'a - b', new: 'a + b' } }] },
      { check: (body) => assert.equal(lastResult(body), 'Edited src/math.js.'), text: ['fixed'] },
    ]);
    const id = await start('fix add');
    const approval = await pending(id);
    assert.match(approval.diff, /-export const add = \(a, b\) => a - b;\n\+export const add = \(a, b\) => a \+ b;/);
    assert.equal(readFileSync(join(folder, 'src', 'math.js'), 'utf8'), 'export const add = (a, b) => a - b;\n');
    assert.equal((await decide(id, approval.callId, 'allow')).status, 204);
    await idle(id);
    assert.equal(readFileSync(join(folder, 'src', 'math.js'), 'utf8'), 'export const add = (a, b) => a + b;\n');
    const doc = await vscode.workspace.openTextDocument(join(folder, 'src', 'math.js'));
    await vscode.window.showTextDocument(doc);
    await run('undo');
    assert.equal(doc.getText(), 'export const add = (a, b) => a - b;\n');
    await run('workbench.action.files.revert');
    await run('workbench.action.closeActiveEditor');
    failures();
  });

  it('the phone\'s Undo (Changes, signed) through VS Code: a rewritten file back as it was, a file the session made removed', async () => {
    writeFileSync(join(folder, 'undo-me.txt'), 'before\n');
    model.script([
      { calls: [{ name: 'write_file', arguments: { path: 'undo-me.txt', content: 'after\n' } }, { name: 'write_file', arguments: { path: 'made.txt', content: 'new\n' } }] },
      { text: ['done'] },
    ]);
    const id = await start('change two files');
    let last = '';
    for (let i = 0; i < 2; i++) {
      const a = await waitFor('an approval', async () => (await snapshot(id)).pending.find((p: any) => p.callId !== last), 20_000);
      last = a.callId;
      assert.equal((await decide(id, a.callId, 'allow')).status, 204);
    }
    await idle(id);
    assert.equal(readFileSync(join(folder, 'undo-me.txt'), 'utf8'), 'after\n');
    const listed = (await call('GET', `/v1/agent/sessions/${id}/changes`)).json.files as { path: string; kind: string; digest: string }[];
    assert.deepEqual(listed.map((f) => [f.path, f.kind]), [['undo-me.txt', 'modified'], ['made.txt', 'created']]);
    for (const f of listed) {
      const reply = await call('POST', `/v1/agent/sessions/${id}/changes/undo`, { path: f.path, digest: f.digest, ...(await signAction(phone.key, 'undo', id, [f.path, f.digest])) });
      assert.equal(reply.status, 200, JSON.stringify(reply.json));
    }
    assert.equal(readFileSync(join(folder, 'undo-me.txt'), 'utf8'), 'before\n');
    assert.equal(existsSync(join(folder, 'made.txt')), false);
    assert.deepEqual((await call('GET', `/v1/agent/sessions/${id}/changes`)).json.files, []);
    rmSync(join(folder, 'undo-me.txt'));
    failures();
  });

  it('a write through a dangling symbolic link is refused before any card, and nothing is created where it points', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'deskrelay-e2e-outside-'));
    symlinkSync(join(outside, 'newfile.txt'), join(folder, 'dangling.txt'));
    symlinkSync('.git/hooks/pre-commit', join(folder, 'hooklink'));
    let id: string | undefined;
    try {
      model.script([
        { calls: [{ name: 'write_file', arguments: { path: 'dangling.txt', content: 'pwned\n' } }] },
        { check: (body) => assert.match(lastResult(body), /symbolic link/), calls: [{ name: 'write_file', arguments: { path: 'hooklink', content: '#!/bin/sh\n' } }] },
        { check: (body) => assert.match(lastResult(body), /symbolic link/), text: ['refused'] },
      ]);
      id = await start('write through the links');
      await idle(id);
      assert.deepEqual((await snapshot(id)).pending, []);
      assert.equal(existsSync(join(outside, 'newfile.txt')), false);
      assert.equal(existsSync(join(folder, '.git', 'hooks', 'pre-commit')), false);
      failures();
    } finally {
      // A card left waiting (the write not refused) must not hold the next tests' script.
      if (id) await actAs({ url: base, phone }, id, 'delete');
      model.script([]);
      rmSync(join(folder, 'dangling.txt'));
      rmSync(join(folder, 'hooklink'));
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('a command runs in the "DeskRelay Agent" terminal and its output and exit code come back', async () => {
    let result = '';
    model.script([
      { calls: [{ name: 'run_command', arguments: { command: `sh -c 'echo agent-was-here; exit 3'` } }] },
      { check: (body) => void (result = lastResult(body)), text: ['ran'] },
    ]);
    const id = await start('run it');
    const approval = await pending(id);
    assert.equal(approval.command, `sh -c 'echo agent-was-here; exit 3'`);
    await decide(id, approval.callId, 'allow');
    await idle(id);
    assert.ok(vscode.window.terminals.some((t) => t.name === 'DeskRelay Agent'), 'the terminal is open');
    assert.match(result, /^Exit code 3\./);
    assert.match(result, /agent-was-here/);
    // DeskRelay's own terminal, showing the command as it runs (not a hidden process).
    const terminal = vscode.window.terminals.find((t) => t.name === 'DeskRelay Agent')!;
    assert.ok('pty' in terminal.creationOptions, 'the terminal is DeskRelay\'s own');
    failures();
  });

  it('fast commands in a row each bring back their output (none is lost under load)', async () => {
    // Reading a shell terminal back through VS Code's shell integration lost a fast command's
    // output now and then on a loaded machine; DeskRelay's own terminal must never.
    const results: string[] = [];
    const steps = Array.from({ length: 6 }, (_, i) => ({ calls: [{ name: 'run_command', arguments: { command: `echo quick-${i}` } }] }));
    model.script([
      steps[0]!,
      ...steps.slice(1).map((step) => ({ ...step, check: (body: { messages: any[] }) => void results.push(lastResult(body)) })),
      { check: (body: { messages: any[] }) => void results.push(lastResult(body)), text: ['done'] },
    ] as any);
    const id = await start('run six');
    for (let i = 0; i < 6; i++) {
      const approval = await waitFor(`approval ${i}`, async () => (await snapshot(id)).pending.find((p: any) => p.command === `echo quick-${i}`), 20_000);
      await decide(id, approval.callId, 'allow');
    }
    await idle(id);
    assert.deepEqual(results.map((r) => r.replace(/\s+$/, '')), Array.from({ length: 6 }, (_, i) => `Exit code 0.\nquick-${i}`));
    failures();
  });

  it('a command gets the environment minus credentials, deskrelay.agent.env.pass and .drop applied', async () => {
    // The test runs in the extension host: its environment is the one commands start from.
    Object.assign(process.env, { E2E_PLAIN: 'plain', E2E_DROPPED: 'dropped', E2E_GITHUB_PAT: 'ghp', E2E_PASSED_TOKEN: 'kept', E2E_DB: 'postgres://u:pw@db/app' });
    await setSetting('agent.env.pass', ['E2E_PASSED_TOKEN']);
    await setSetting('agent.env.drop', ['e2e_dropped']);
    let result = '';
    model.script([
      { calls: [{ name: 'run_command', arguments: { command: 'env' } }] },
      { check: (body) => void (result = lastResult(body)), text: ['ok'] },
    ]);
    try {
      const id = await start('env');
      const approval = await pending(id);
      await decide(id, approval.callId, 'allow');
      await idle(id);
    } finally {
      for (const key of ['agent.env.pass', 'agent.env.drop']) await setSetting(key, undefined);
      for (const name of ['E2E_PLAIN', 'E2E_DROPPED', 'E2E_GITHUB_PAT', 'E2E_PASSED_TOKEN', 'E2E_DB']) delete process.env[name];
    }
    const names = result.split('\n').map((l) => l.split('=')[0]);
    for (const kept of ['PATH', 'HOME', 'E2E_PLAIN', 'E2E_PASSED_TOKEN']) assert.ok(names.includes(kept), `${kept} kept: ${names.join(' ')}`);
    for (const gone of ['E2E_DROPPED', 'E2E_GITHUB_PAT', 'E2E_DB']) assert.ok(!names.includes(gone), `${gone} dropped`);
    failures();
  });

  it('Ctrl+C typed in the "DeskRelay Agent" terminal stops the command, and the model is told', async () => {
    let result = '';
    model.script([
      { calls: [{ name: 'run_command', arguments: { command: 'touch ctrl-c.started; echo waiting-for-ctrl-c; sleep 300' } }] },
      { check: (body) => void (result = lastResult(body)), text: ['ok'] },
    ]);
    const id = await start('wait');
    const approval = await pending(id);
    await decide(id, approval.callId, 'allow');
    const terminal = vscode.window.terminals.find((t) => t.name === 'DeskRelay Agent');
    assert.ok(terminal, 'the terminal is open');
    await waitFor('the command to run', () => existsSync(join(folder, 'ctrl-c.started')) || undefined, 10_000);
    terminal.sendText('\x03', false);
    await idle(id);
    assert.match(result, /waiting-for-ctrl-c/, result);
    assert.match(result, /Ctrl\+C/, result);
    failures();
  });

  it('stop kills the command running in the terminal with everything it started', async () => {
    const pidFile = join(folder, 'bg.pid');
    let result = '';
    model.script([
      // One in the command's process group, one that left it (setsid): a stop ends both.
      { calls: [{ name: 'run_command', arguments: { command: `sleep 300 & echo $! > bg.pid; setsid sh -c 'echo $$ > bg2.pid.tmp; mv bg2.pid.tmp bg2.pid; exec sleep 300' >/dev/null 2>&1 & sleep 300` } }] },
      { check: (body) => void (result = lastResult(body)), text: ['?'] },
    ]);
    const id = await start('sleep');
    const approval = await pending(id);
    await decide(id, approval.callId, 'allow');
    const pid = await waitFor('the background pid', () => {
      try {
        return Number(readFileSync(pidFile, 'utf8').trim()) || undefined;
      } catch {
        return undefined;
      }
    });
    const setsid = await waitFor('the setsid pid', () => {
      try {
        return Number(readFileSync(join(folder, 'bg2.pid'), 'utf8').trim()) || undefined;
      } catch {
        return undefined;
      }
    });
    assert.equal(alive(pid), true);
    assert.equal(alive(setsid), true);
    assert.equal((await call('POST', `/v1/agent/sessions/${id}/stop`)).status, 204);
    await waitFor('the background sleep to be gone', () => !alive(pid), 10_000);
    await waitFor('the setsid sleep to be gone', () => !alive(setsid), 10_000);
    await waitFor('the stopped result', async () => (await snapshot(id)).transcript.some((t: any) => t.role === 'tool' && /^Stopped by the user/.test(t.output)), 10_000);
    assert.equal((await snapshot(id)).status, 'stopped');
    assert.equal(result, '', 'the model is not called again after a stop');
  });

  it('searches with ripgrep when there is one (VS Code\'s own, or rg on PATH), else the plain search', async () => {
    mkdirSync(join(folder, 'rg'), { recursive: true });
    writeFileSync(join(folder, 'rg', 'a.txt'), 'needle-in-vscode\n');
    symlinkSync(join(folder, 'rg', 'a.txt'), join(folder, 'rg', 'link.txt'));
    let result = '';
    model.script([{ calls: [{ name: 'search', arguments: { query: 'needle-in-vscode', path: 'rg' } }] }, { check: (body) => void (result = lastResult(body)), text: ['found'] }]);
    await idle(await start('find the needle'));
    const rgOnPath = (process.env.PATH ?? '').split(':').some((d) => existsSync(join(d, 'rg')));
    const shipped = existsSync(join(vscode.env.appRoot, 'node_modules', '@vscode', 'ripgrep', 'bin', 'rg'));
    // ripgrep does not follow the link; the plain search does.
    assert.equal(result, rgOnPath || shipped ? 'rg/a.txt:1: needle-in-vscode' : 'rg/a.txt:1: needle-in-vscode\nrg/link.txt:1: needle-in-vscode');
    failures();
  });

  it('diagnostics are the Problems list', async () => {
    const collection = vscode.languages.createDiagnosticCollection('agent-test');
    const uri = vscode.Uri.file(join(folder, 'src', 'math.js'));
    collection.set(uri, [new vscode.Diagnostic(new vscode.Range(0, 0, 0, 5), 'add is wrong', vscode.DiagnosticSeverity.Error)]);
    // Problems in protected files are left out, by the one deny list (any case, any key name).
    for (const secret of ['keys/id_ecdsa', 'Server.PEM', '.Git/config']) {
      collection.set(vscode.Uri.file(join(folder, secret)), [new vscode.Diagnostic(new vscode.Range(0, 0, 0, 5), 'secret problem', vscode.DiagnosticSeverity.Error)]);
    }
    model.script([
      { calls: [{ name: 'diagnostics', arguments: {} }] },
      {
        check: (body) => {
          assert.match(lastResult(body), /^src\/math\.js:1: error: add is wrong$/m);
          assert.doesNotMatch(lastResult(body), /secret problem/);
        },
        text: ['seen'],
      },
    ]);
    await idle(await start('problems?'));
    collection.dispose();
    failures();
  });

  it('offers the tools other extensions register, asking first unless auto-approved', async () => {
    let results: string[] = [];
    model.script([
      {
        check: (body) => assert.ok(body.tools!.some((t: any) => t.function.name === 'standin_clock' && t.function.description === 'Tells the time in a city.'), 'the tool is offered'),
        calls: [{ name: 'standin_clock', arguments: { city: 'Oslo' } }],
      },
      { check: (body) => void (results = toolResults(body).map((r) => r.content)), text: ['noon'] },
    ]);
    const id = await start('time in Oslo?');
    const approval = await pending(id);
    assert.deepEqual([approval.tool, approval.input], ['standin_clock', { city: 'Oslo' }]);
    await decide(id, approval.callId, 'allow');
    await idle(id);
    assert.equal(results.at(-1), 'It is 12:00 in Oslo.');
    await setSetting('agent.autoApproveTools', ['standin_clock']);
    model.script([{ calls: [{ name: 'standin_clock', arguments: { city: 'Lima' } }] }, { check: (body) => void (results = toolResults(body).map((r) => r.content)), text: ['noon'] }]);
    const auto = await start('time in Lima?');
    await idle(auto);
    assert.deepEqual((await snapshot(auto)).transcript.filter((t: any) => t.role === 'tool').map((t: any) => t.output), ['It is 12:00 in Lima.']);
    await setSetting('agent.autoApproveTools', undefined);
    failures();
  });

  it('an ACP agent (deskrelay.agent.acpAgents): its edit is a WorkspaceEdit Undo takes back; its terminal runs in the DeskRelay Agent terminal', async () => {
    // The suite runs from .cache/vscode-suite/suite; the stand-in ACP agent is the repository's.
    const standIn = join(__dirname, '..', '..', '..', 'test', 'fixtures', 'acp', 'agent.mjs');
    await setSetting('agent.acpAgents', { standin: { name: 'Stand-in', command: process.execPath, args: [standIn] } });
    const agents = await call('GET', '/v1/agent/agents');
    assert.deepEqual(agents.json.agents.find((a: any) => a.id === 'standin'), { id: 'standin', name: 'Stand-in', available: true });
    writeFileSync(join(folder, 'acp.txt'), 'one old line\n');
    const created = await call('POST', '/v1/agent/sessions', { prompt: 'edit acp.txt old new', agent: 'standin' });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    const approval = await pending(id);
    assert.match(approval.diff, /-one old line\n\+one new line/);
    await decide(id, approval.callId, 'allow');
    await idle(id);
    assert.equal(readFileSync(join(folder, 'acp.txt'), 'utf8'), 'one new line\n');
    const doc = await vscode.workspace.openTextDocument(join(folder, 'acp.txt'));
    await vscode.window.showTextDocument(doc);
    await run('undo');
    assert.equal(doc.getText(), 'one old line\n');
    await run('workbench.action.files.revert');
    await run('workbench.action.closeActiveEditor');

    const before = vscode.window.terminals.filter((t) => t.name === 'DeskRelay Agent').length;
    assert.equal((await call('POST', `/v1/agent/sessions/${id}/messages`, { text: 'run echo acp-in-terminal' })).status, 202);
    const command = await waitFor('the command approval', async () => (await snapshot(id)).pending.find((p: any) => p.command === 'echo acp-in-terminal'), 20_000);
    await decide(id, command.callId, 'allow');
    await idle(id);
    const said = (await snapshot(id)).transcript.filter((t: any) => t.role === 'tool').map((t: any) => t.output).join('\n');
    assert.match(said, /\$ echo acp-in-terminal\nacp-in-terminal/);
    assert.ok(vscode.window.terminals.some((t) => t.name === 'DeskRelay Agent' && 'pty' in t.creationOptions), `the DeskRelay Agent terminal (${before} before)`);
    await setSetting('agent.acpAgents', undefined);
  });

  it('the DeskRelay view: a session from the phone\'s door appears; the desk\'s answer reaches the phone\'s stream; the edit opens as a diff; Stop', async () => {
    writeFileSync(join(folder, 'src', 'desk.js'), 'const n = 1;\n');
    model.script([
      { calls: [{ name: 'edit_file', arguments: { path: 'src/desk.js', old: 'n = 1', new: 'n = 2' } }] },
      { check: (body) => assert.equal(lastResult(body), 'Edited src/desk.js.'), calls: [{ name: 'run_command', arguments: { command: 'echo never-run' } }] },
    ]);
    const id = await start('desk edit');
    // The phone follows the session's events (the POST form of the stream).
    const { events, stop: phoneGone } = await follow(id);
    const desk = (await api() as unknown as { agentDesk: any }).agentDesk;
    const approval = await pending(id);
    // The view lists it, with its folder and the approval waiting.
    const row = await waitFor('the session in the view', () => desk.items().find((i: any) => i.id === id && i.pending === 1));
    assert.equal(row.label, 'desk edit');
    assert.match(row.description, new RegExp(`^${vscode.workspace.workspaceFolders![0]!.name} · waiting for you · 1 waiting$`));
    assert.ok((await desk.getChildren()).includes(id));
    // The desk answers in the session's webview (its button's message), first; the phone's late answer is refused.
    const panel = desk.open(id);
    assert.equal(await panel.receive({ type: 'decide', callId: approval.callId, decision: 'allow' }), undefined);
    const late = await decide(id, approval.callId, 'deny');
    assert.equal(late.status, 409);
    await waitFor('the decision on the phone\'s stream', () => events.find((e) => e.type === 'decision' && e.callId === approval.callId));
    assert.equal(events.find((e) => e.type === 'decision').decision, 'allow');
    await waitFor('the edit on disk', () => readFileSync(join(folder, 'src', 'desk.js'), 'utf8') === 'const n = 2;\n' || undefined);
    await waitFor('the edit\'s result', async () => (await appliedCalls(id)).includes(approval.callId) || undefined);
    // The applied edit, on request, as a diff editor: its own before on the left, its own after on the right.
    assert.equal(await desk.openDiff(desk.session(id), approval.callId), undefined);
    const tab = await waitFor('a diff editor', () => diffTabs('deskrelay-agent')[0]);
    assert.deepEqual(await diffTexts(tab), ['const n = 1;\n', 'const n = 2;\n']);
    await closeDiffs();
    // The command waits; Stop at the desk stops it, and the phone sees it.
    const command = await waitFor('the command approval', () => events.find((e) => e.type === 'approval' && e.command === 'echo never-run'));
    await panel.receive({ type: 'stop' });
    await waitFor('stopped on the phone\'s stream', () => events.find((e) => e.type === 'status' && e.status === 'stopped'));
    assert.deepEqual(events.filter((e) => e.type === 'decision').map((e) => [e.callId, e.decision]), [[approval.callId, 'allow'], [command.callId, 'deny']]);
    await waitFor('the view shows it stopped', () => desk.items().find((i: any) => i.id === id && i.status === 'stopped'));
    phoneGone();
    panel.dispose();
    failures();
  });

  it('a command allowed until a file changes asks again after an edit; the desk\'s card says why, its buttons what they grant', async () => {
    await setSetting('agent.enabled', true);
    model.script([
      { calls: [{ name: 'run_command', arguments: { command: 'echo granted' } }] },
      { calls: [{ name: 'write_file', arguments: { path: 'granted.txt', content: 'g\n' } }] },
      { calls: [{ name: 'run_command', arguments: { command: 'echo granted' } }] },
      { text: ['ok'] },
    ]);
    const id = await start('grant, edit, again');
    const desk = (await api() as unknown as { agentDesk: any }).agentDesk;
    const panel = desk.open(id);
    const first = await pending(id);
    const shown = (what: string, check: (html: string) => boolean): Promise<string> => waitFor(what, async () => {
      const html: string = await panel.rendered();
      return check(html) ? html : undefined;
    });
    const html = await shown('the command card', (h) => h.includes('echo granted'));
    assert.match(html, />Allow this exact command until a file changes</);
    assert.equal(await panel.receive({ type: 'decide', callId: first.callId, decision: 'allow_session' }), undefined);
    const write = await waitFor('the write approval', async () => (await snapshot(id)).pending.find((p: any) => p.tool === 'write_file'));
    assert.match(await shown('the write card', (h) => h.includes('granted.txt')), />Allow every edit in this session</);
    assert.equal(await panel.receive({ type: 'decide', callId: write.callId, decision: 'allow_session' }), undefined);
    const again = await waitFor('the command asked again', async () => (await snapshot(id)).pending.find((p: any) => p.tool === 'run_command'));
    assert.equal(again.reason, 'A file changed since you allowed this command for the session.');
    await shown('the reason on the desk\'s card', (h) => h.includes('<p class="reason">A file changed since you allowed this command for the session.</p>'));
    assert.equal(await panel.receive({ type: 'decide', callId: again.callId, decision: 'deny' }), undefined);
    await idle(id);
    panel.dispose();
    failures();
  });

  it('the session webview renders the model\'s Markdown, sanitised as on the phone; in DeskRelay Chats the session opens it', async () => {
    await setSetting('agent.enabled', true);
    model.script([{ text: ['Done: **renamed** `n`.\n\n', '| a | b |\n|---|---|\n| 1 | 2 |\n\n', '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'] }]);
    const id = await start('markdown please');
    await idle(id);
    const desk = (await api() as unknown as { agentDesk: any }).agentDesk;
    // DeskRelay Chats lists the session (conversations kept on the desktop); its row opens the session's webview.
    await setSetting('keepConversations', true);
    const item = await waitFor('the session in DeskRelay Chats', async () => (await api()).chatItem(id));
    assert.deepEqual([item.command?.command, item.command?.arguments], ['deskrelay.agent.open', [id]]);
    await run('deskrelay.agent.open', id);
    const panel = await waitFor('the session webview', () => desk.panel(id));
    const html: string = await waitFor('the rendered reply', async () => {
      const shown: string = await panel.rendered();
      return /<strong>renamed<\/strong>/.test(shown) ? shown : undefined;
    });
    assert.match(html, /<code>n<\/code>/);
    assert.match(html, /<table>[\s\S]*<td>1<\/td>/);
    assert.doesNotMatch(html, /<img|onerror|<script/i);
    // The user's words stay text.
    assert.match(html, /<li class="user">markdown please<\/li>/);
    panel.dispose();
    await setSetting('keepConversations', undefined);
    failures();
  });

  it('an edit to a file with unsaved changes is made in the editor and left unsaved: the agent never saves what the user typed', async () => {
    const file = join(folder, 'src', 'dirty.js');
    writeFileSync(file, 'line one\n');
    const doc = await vscode.workspace.openTextDocument(file);
    const editor = await vscode.window.showTextDocument(doc);
    await editor.edit((b) => b.insert(new vscode.Position(1, 0), 'typed by the user\n'));
    assert.equal(doc.isDirty, true);
    model.script([
      { calls: [{ name: 'edit_file', arguments: { path: 'src/dirty.js', old: 'line one', new: 'line ONE' } }] },
      { check: (body) => assert.match(lastResult(body), /^Edited src\/dirty\.js\. The file had unsaved changes in the editor: the edit was made there and left unsaved/), text: ['ok'] },
    ]);
    const id = await start('edit the dirty file');
    const approval = await pending(id);
    await decide(id, approval.callId, 'allow');
    await idle(id);
    assert.equal(readFileSync(file, 'utf8'), 'line one\n', 'nothing the user typed (nor the edit) was saved');
    assert.equal(doc.isDirty, true);
    assert.equal(doc.getText(), 'line ONE\ntyped by the user\n');
    await vscode.window.showTextDocument(doc);
    await run('workbench.action.files.revert');
    await run('workbench.action.closeActiveEditor');
    failures();
  });

  it('every applied edit, asked or granted, is in the transcript and the Changes list with its own diff; the proposed change opens in a diff editor before any write, beside the card', async () => {
    const file = join(folder, 'src', 'two.js');
    writeFileSync(file, 'a = 1;\n');
    model.script([
      { calls: [{ name: 'edit_file', arguments: { path: 'src/two.js', old: 'a = 1', new: 'a = 2' } }] },
      { calls: [{ name: 'edit_file', arguments: { path: 'src/two.js', old: 'a = 2', new: 'a = 3' } }] },
      { text: ['both done'] },
    ]);
    const id = await start('two edits');
    const d = await desk();
    const panel = d.open(id);
    const approval = await pending(id);
    // Before deciding: the file as it is against the proposed text, nothing written, the card still in view.
    assert.equal(await panel.receive({ type: 'proposed', callId: approval.callId }), undefined);
    const proposed = await waitFor('the proposed diff', () => diffTabs('deskrelay-agent-proposed')[0]);
    assert.deepEqual(await diffTexts(proposed), ['a = 1;\n', 'a = 2;\n']);
    assert.equal((proposed.input as vscode.TabInputTextDiff).original.fsPath, file);
    assert.equal(readFileSync(file, 'utf8'), 'a = 1;\n');
    assert.equal(panel.visible, true, 'the diff editor opened beside the waiting card, not over it');
    // Allow from the diff editor's title (its Allow button's command): it decides that call.
    assert.equal(await run('deskrelay.agent.allowProposed', (proposed.input as vscode.TabInputTextDiff).modified), true);
    await waitFor('the first edit', () => readFileSync(file, 'utf8') === 'a = 2;\n' || undefined);
    await closeDiffs();
    // The first was allowed once, so the second asks; "every edit in this session" grants the rest.
    const second = await waitFor('the second card', async () => (await snapshot(id)).pending.find((p: any) => p.callId !== approval.callId));
    assert.equal(await panel.receive({ type: 'decide', callId: second.callId, decision: 'allow_session' }), undefined);
    await idle(id);
    assert.equal(readFileSync(file, 'utf8'), 'a = 3;\n');
    const calls = await appliedCalls(id);
    assert.deepEqual(calls, [approval.callId, second.callId]);
    // Each Open diff is that edit's own before and after, though the file moved on.
    assert.equal(await panel.receive({ type: 'diff', callId: approval.callId }), undefined);
    assert.deepEqual(await diffTexts(await waitFor('the first diff', () => diffTabs('deskrelay-agent')[0])), ['a = 1;\n', 'a = 2;\n']);
    await closeDiffs();
    assert.equal(await panel.receive({ type: 'diff', callId: second.callId }), undefined);
    assert.deepEqual(await diffTexts(await waitFor('the second diff', () => diffTabs('deskrelay-agent')[0])), ['a = 2;\n', 'a = 3;\n']);
    await closeDiffs();
    const html = await shown(panel, 'the Changes list', (h) => h.includes('Changes (2)'));
    assert.equal((html.match(/class="change-row"/g) ?? []).length, 2);
    panel.dispose();
    // A later edit under the session's grant asks nothing, and still shows on the desk with its diff.
    model.script([{ calls: [{ name: 'edit_file', arguments: { path: 'src/two.js', old: 'a = 3', new: 'a = 4' } }] }, { text: ['granted'] }]);
    await call('POST', `/v1/agent/sessions/${id}/messages`, { text: 'once more' });
    await waitFor('the granted edit', async () => ((await appliedCalls(id)).length === 3 ? true : undefined), 20_000);
    await idle(id);
    const again = d.open(id);
    const granted = await shown(again, 'the granted edit on the desk', (h) => h.includes('Edited (allowed for this session)'));
    assert.match(granted, /a = 4;/);
    assert.equal((granted.match(/class="change-row"/g) ?? []).length, 3);
    again.dispose();
    failures();
  });

  it('reverting an agent edit, from its card or with Undo in the editor, is marked reverted on every screen and the model is told at its next step', async () => {
    const file = join(folder, 'src', 'rev.js');
    writeFileSync(file, 'r = 1;\n');
    model.script([
      { calls: [{ name: 'edit_file', arguments: { path: 'src/rev.js', old: 'r = 1', new: 'r = 2' } }] },
      { text: ['edited'] },
      {
        check: (body) => assert.ok(body.messages.some((m: any) => m.role === 'user' && /reverted your edit to src\/rev\.js/.test(m.content)), 'the model is told of the revert'),
        calls: [{ name: 'edit_file', arguments: { path: 'src/rev.js', old: 'r = 1', new: 'r = 5' } }],
      },
      { text: ['again'] },
    ]);
    const id = await start('revert me');
    const phone = await follow(id);
    const first = await pending(id);
    await decide(id, first.callId, 'allow');
    await idle(id);
    const d = await desk();
    const panel = d.open(id);
    await shown(panel, 'the applied edit', (h) => h.includes('Changes (1)'));
    assert.equal(await panel.receive({ type: 'revert', callId: first.callId }), undefined);
    assert.equal(readFileSync(file, 'utf8'), 'r = 1;\n');
    await waitFor('reverted on the phone\'s stream', () => phone.events.find((e) => e.type === 'reverted' && e.callId === first.callId && e.path === 'src/rev.js'));
    await shown(panel, 'the revert as a line of its own', (h) => h.includes('<li class="line reverted">Reverted: src/rev.js</li>'));
    await call('POST', `/v1/agent/sessions/${id}/messages`, { text: 'go on' });
    const second = await pending(id);
    await decide(id, second.callId, 'allow');
    await idle(id);
    assert.equal(readFileSync(file, 'utf8'), 'r = 5;\n');
    // Undo in the editor, where DeskRelay sees it.
    const doc = await vscode.workspace.openTextDocument(file);
    await vscode.window.showTextDocument(doc);
    await run('undo');
    assert.equal(doc.getText(), 'r = 1;\n');
    await waitFor('the undo seen as a revert', () => phone.events.find((e) => e.type === 'reverted' && e.callId === second.callId));
    await run('workbench.action.files.revert');
    await run('workbench.action.closeActiveEditor');
    phone.stop();
    panel.dispose();
    failures();
  });

  it('Deny and say why: the note reaches the model with the denial, from the desk and from the phone', async () => {
    model.script([
      { calls: [{ name: 'run_command', arguments: { command: 'echo nope' } }] },
      {
        check: (body) => assert.equal(lastResult(body), 'The user denied this. Nothing was changed or run.\nThe user said: use the test script instead'),
        calls: [{ name: 'run_command', arguments: { command: 'echo again' } }],
      },
      { check: (body) => assert.equal(lastResult(body), 'The user denied this. Nothing was changed or run.\nThe user said: not now'), text: ['understood'] },
    ]);
    const id = await start('deny with notes');
    const d = await desk();
    const panel = d.open(id);
    const first = await pending(id);
    assert.equal(await panel.receive({ type: 'decide', callId: first.callId, decision: 'deny', note: 'use the test script instead' }), undefined);
    await shown(panel, 'the note on the card', (h) => h.includes('Your note: use the test script instead'));
    const second = await waitFor('the second card', async () => (await snapshot(id)).pending.find((p: any) => p.command === 'echo again'));
    assert.equal((await decide(id, second.callId, 'deny', { note: 'not now' })).status, 204);
    await idle(id);
    panel.dispose();
    failures();
  });

  it('a message typed at the desk mid-turn is shown queued, kept across Stop, and sent with the next; the page stays when hidden; Stopped is a line of its own', async () => {
    model.script([{ calls: [{ name: 'run_command', arguments: { command: 'echo hold' } }] }]);
    const id = await start('hold on');
    const d = await desk();
    const panel = d.open(id);
    await pending(id);
    await panel.receive({ type: 'send', text: 'also do this' });
    await shown(panel, 'the queued message', (h) => /<li class="user queued">also do this<span class="queued-label">/.test(h));
    // Hidden behind an editor and shown again, the page is the same page (nothing reloaded).
    await waitFor('the page loaded', () => panel.loads === 1 || undefined);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(join(folder, 'README.md')), { viewColumn: vscode.ViewColumn.Active });
    await waitFor('the panel hidden', () => !panel.visible || undefined);
    panel.reveal();
    await waitFor('the panel shown', () => panel.visible || undefined);
    await shown(panel, 'the queued message still there', (h) => h.includes('also do this'));
    assert.equal(panel.loads, 1);
    await panel.receive({ type: 'stop' });
    await shown(panel, 'Stopped, and the message still queued', (h) => h.includes('<li class="line stopped">Stopped by the user.</li>') && h.includes('class="user queued"'));
    model.script([
      { check: (body) => assert.deepEqual(body.messages.filter((m: any) => m.role === 'user').map((m: any) => m.content).slice(-2), ['also do this', 'and this']), text: ['both'] },
    ]);
    await panel.receive({ type: 'send', text: 'and this' });
    await idle(id);
    const html = await shown(panel, 'the queued message joined', (h) => h.includes('<li class="user">and this</li>'));
    assert.doesNotMatch(html, /user queued/);
    await run('workbench.action.closeAllEditors');
    panel.dispose();
    failures();
  });

  it('a waiting approval raises a notification whose Allow decides the call, and a badge on the view', async () => {
    const d = await desk();
    const asked: string[] = [];
    let answer: (choice: string) => void = () => {};
    const original = d.notify;
    d.notify = (message: string, ...items: string[]) => {
      asked.push(`${message} [${items.join('|')}]`);
      return new Promise<string>((resolve) => (answer = resolve));
    };
    try {
      let result = '';
      model.script([{ calls: [{ name: 'run_command', arguments: { command: 'echo notified' } }] }, { check: (body) => void (result = lastResult(body)), text: ['ok'] }]);
      const id = await start('notify me');
      await waitFor('the notification', () => asked.length > 0 || undefined);
      assert.match(asked[0]!, /: run echo notified \[Allow\|Deny\|Open\]$/);
      // Every approval waiting in the relay's sessions, this one among them.
      const waiting = (await call('GET', '/v1/agent/sessions')).json.sessions.reduce((n: number, s: any) => n + s.pending, 0);
      assert.ok(waiting >= 1);
      assert.deepEqual(await waitFor('the badge', () => d.badge), { value: waiting, tooltip: `${waiting} waiting for you` });
      answer('Allow');
      await idle(id);
      assert.match(result, /notified/);
      assert.equal((await snapshot(id)).transcript.some((t: any) => t.role === 'tool' && t.ok), true);
      await waitFor('the badge down by one', () => (d.badge?.value ?? 0) === waiting - 1 || undefined);
    } finally {
      d.notify = original;
    }
    failures();
  });

  it('New Agent Session at the desk is the session the phone lists; its row says status and waiting (description and tooltip); Stop and Delete from the row', async () => {
    model.script([{ calls: [{ name: 'run_command', arguments: { command: 'echo from-desk' } }] }]);
    const name = vscode.workspace.workspaceFolders![0]!.name;
    const id = await run<string>('deskrelay.agent.new', name, 'from the desk');
    assert.ok(id);
    const listed = await call('GET', '/v1/agent/sessions');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.json.sessions.filter((s: any) => s.id === id).map((s: any) => [s.title, s.folder]), [['from the desk', name]]);
    const d = await desk();
    await waitFor('the row waiting', () => d.items().find((i: any) => i.id === id && i.pending === 1));
    const item = d.getTreeItem(id);
    assert.equal(item.tooltip, `from the desk\n${name} · waiting for you · 1 waiting`);
    assert.equal(item.contextValue, 'agentSession.busy');
    await run('deskrelay.agent.stop', id);
    await waitFor('stopped', async () => ((await snapshot(id)).status === 'stopped' ? true : undefined));
    assert.equal(d.getTreeItem(id).contextValue, 'agentSession');
    assert.equal(await run('deskrelay.agent.delete', id, true), true);
    assert.equal((await call('GET', `/v1/agent/sessions/${id}`)).status, 404);
    model.script([]);
  });

  it('turning the agent off is said plainly in the view and on an open session\'s page; in a remote window it is the Machine settings that hold it', async () => {
    model.script([{ text: ['hello'] }]);
    const id = await start('still here?');
    await idle(id);
    const d = await desk();
    const panel = d.open(id);
    await shown(panel, 'the session', (h) => h.includes('still here?'));
    // code-server is a remote window: VS Code keeps machine-scoped settings in the server's
    // Machine/settings.json; the user's settings.json does not count for them.
    const ud = join((await api()).conversationsDir, '..', '..', '..', '..');
    const machine = join(ud, 'Machine', 'settings.json');
    assert.equal(JSON.parse(readFileSync(machine, 'utf8'))['deskrelay.agent.enabled'], true, 'the setting (written as a user setting) is in Machine/settings.json');
    await setSetting('agent.enabled', false);
    assert.doesNotMatch(readFileSync(join(ud, 'User', 'settings.json'), 'utf8'), /deskrelay\.agent\.enabled/);
    await waitFor('the view says the agent is off', () => /^The workspace agent is off\./.test(d.message ?? '') || undefined);
    const html = await shown(panel, 'the banner', (h) => h.startsWith('<p id="ended">'));
    assert.match(html, /the workspace agent was turned off at the desk/);
    // Still there after the passing notices have gone.
    await new Promise((r) => setTimeout(r, 6500));
    assert.match(await panel.rendered(), /^<p id="ended">This session ended: the workspace agent was turned off/);
    panel.dispose();
    await setSetting('agent.enabled', true);
    await waitFor('the view says nothing', () => d.message === undefined || undefined);
  });

  it('turning the setting off ends the agent (403 again)', async () => {
    await setSetting('agent.enabled', false);
    assert.equal((await call('GET', '/v1/agent/sessions')).status, 403);
  });
});
