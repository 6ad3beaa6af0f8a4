/** CONTRACT §6: the standalone config file, its checks, and switching without a restart. */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeOf, ConfigFile, defaultConfig, noProviderNotice, parseConfig } from '../../server/src/cli/config';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, chatBody, chatHeaders, parseEvents, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';

describe('parseConfig', () => {
  it('reads the CONTRACT example', () => {
    const config = parseConfig(
      JSON.stringify({
        activeProvider: 'local',
        workspaces: 2,
        maxConcurrentStreams: 4,
        providers: [
          { id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:11434', model: 'auto' },
          { id: 'lmstudio', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:1234/v1', model: 'auto' },
          { id: 'claude', kind: 'anthropic', model: 'claude-sonnet-4-5', apiKeyEnv: 'ANTHROPIC_API_KEY' },
          { id: 'gemini', kind: 'gemini', model: 'gemini-2.5-flash', apiKeyEnv: 'GEMINI_API_KEY' },
          { id: 'deskrelay-cloud', kind: 'cloud' },
        ],
      }),
    );
    expect(config.activeProvider).toBe('local');
    expect(config.workspaces).toBe(2);
    expect(config.maxConcurrentStreams).toBe(4);
    expect(config.providers.map((p) => p.kind)).toEqual(['ollama', 'openai-compatible', 'anthropic', 'gemini', 'cloud']);
  });

  it('a file that names nothing gets the defaults: one Ollama provider, 8 streams, push on, the other switches off', () => {
    const empty = parseConfig('{}');
    expect(empty).toEqual(defaultConfig());
    expect(empty.providers).toEqual([{ id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:11434', model: 'auto' }]);
    expect([empty.activeProvider, empty.workspaces, empty.maxConcurrentStreams, empty.maxConnections]).toEqual(['local', 0, 8, 512]);
    expect(empty.agent).toEqual({ folders: [], denyPaths: [], approvals: 'device' });
    // Issue 36: devices are remembered unless the file says otherwise.
    const switches = { allowPhoneProviderSwitch: false, pushNotifications: true, rememberDevices: true, keepConversations: false };
    for (const [field, byDefault] of Object.entries(switches) as [keyof typeof switches, boolean][]) {
      expect(empty[field], field).toBe(byDefault);
      expect(parseConfig(JSON.stringify({ [field]: !byDefault }))[field], field).toBe(!byDefault);
      for (const bad of [1, 'yes']) expect(() => parseConfig(JSON.stringify({ [field]: bad }))).toThrow(`"${field}" must be true or false`);
    }
  });

  it('reads "transcription" and refuses one no openai-compatible provider can serve', () => {
    const providers = [{ id: 'w', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:8080/v1' }, { id: 'o', kind: 'ollama' }];
    const file = (transcription: unknown) => JSON.stringify({ activeProvider: 'o', providers, transcription });
    expect(parseConfig(file({ provider: 'w', model: ' whisper-1 ' })).transcription).toEqual({ provider: 'w', model: 'whisper-1' });
    expect(parseConfig('{}').transcription).toBeUndefined();
    expect(() => parseConfig(file({ provider: 'w' }))).toThrow('"transcription" must be {"provider"');
    expect(() => parseConfig(file('w'))).toThrow('"transcription" must be {"provider"');
    expect(() => parseConfig(file({ provider: 'x', model: 'm' }))).toThrow('names provider "x", which is not among the providers');
    expect(() => parseConfig(file({ provider: 'o', model: 'm' }))).toThrow('of kind ollama; only an openai-compatible provider transcribes');
  });

  it('reads the workspace agent\'s folders and denyPaths, refusing other shapes', () => {
    expect(parseConfig('{"agent":{"folders":["~/code/app"],"denyPaths":["*.sqlite"]}}').agent).toEqual({ folders: ['~/code/app'], denyPaths: ['*.sqlite'], approvals: 'device' });
    expect(parseConfig('{"agent":{"approvals":"token"}}').agent.approvals).toBe('token');
    expect(() => parseConfig('{"agent":{"approvals":"anyone"}}')).toThrow(/"agent.approvals" must be "device"/);
    expect(() => parseConfig('{"agent":["/x"]}')).toThrow('"agent" must be an object');
    expect(() => parseConfig('{"agent":{"folders":"/x"}}')).toThrow('"agent.folders" must be an array of non-empty strings');
  });

  it('reads the names agent commands keep (agent.env.pass) and lose (agent.env.drop), refusing other shapes', () => {
    expect(parseConfig('{"agent":{"env":{"pass":["SSH_AUTH_SOCK"],"drop":["AWS_PROFILE"]}}}').agent.env).toEqual({ pass: ['SSH_AUTH_SOCK'], drop: ['AWS_PROFILE'] });
    expect(parseConfig('{"agent":{"env":{"drop":["X"]}}}').agent.env).toEqual({ pass: [], drop: ['X'] });
    expect(() => parseConfig('{"agent":{"env":["PATH"]}}')).toThrow('"agent.env" must be an object: {"pass": ["NAME"], "drop": ["NAME"]}');
    expect(() => parseConfig('{"agent":{"env":{"pass":"SSH_AUTH_SOCK"}}}')).toThrow('"agent.env.pass" must be an array of variable names');
    expect(() => parseConfig('{"agent":{"env":{"drop":["A=B"]}}}')).toThrow('"agent.env.drop" must be an array of variable names (no "=", not empty): "A=B" is not one');
    expect(() => parseConfig('{"agent":{"env":{"keep":[]}}}')).toThrow('"agent.env" has an unknown field "keep"; it takes "pass" and "drop"');
  });

  it('reads ACP agents ("agents"), refusing bad ids and shapes with the field named', () => {
    const agents = { claude: { name: 'Claude Code', command: 'claude-code-acp', env: { ANTHROPIC_API_KEY: 'k' } }, my: { name: 'Mine', command: '/opt/mine', args: ['--acp'] } };
    expect(parseConfig(JSON.stringify({ agents })).agents).toEqual(agents);
    expect(parseConfig('{}').agents).toBeUndefined();
    expect(() => parseConfig('{"agents":[]}')).toThrow('"agents" must be an object');
    expect(() => parseConfig('{"agents":{"deskrelay":{"name":"x","command":"y"}}}')).toThrow('"deskrelay" is not an agent id');
    expect(() => parseConfig('{"agents":{"Bad Id":{"name":"x","command":"y"}}}')).toThrow('is not an agent id');
    expect(() => parseConfig('{"agents":{"a":{"name":"x"}}}')).toThrow('"agents.a.command" must be a non-empty string');
    expect(() => parseConfig('{"agents":{"a":{"name":"x","command":"y","args":"--acp"}}}')).toThrow('"agents.a.args" must be an array of strings');
    expect(() => parseConfig('{"agents":{"a":{"name":"x","command":"y","env":{"K":1}}}}')).toThrow('"agents.a.env" must be an object of strings');
    expect(() => parseConfig('{"agents":{"a":{"name":"x","command":"y","shell":true}}}')).toThrow('"agents.a.shell" is not a setting');
  });

  it('providers without activeProvider means no active provider (no guessing the first one)', () => {
    const config = parseConfig(JSON.stringify({ providers: [{ id: 'a', kind: 'ollama' }, { id: 'b', kind: 'ollama' }] }));
    expect(config.activeProvider).toBe('');
    expect(activeOf(config)).toEqual({ ok: false, reason: 'none', id: '' });
    expect(noProviderNotice(config, '/cfg/config.json')).toBe(
      'No provider is active: /cfg/config.json names no "activeProvider". Chats get 412 chat.no_provider until you set "activeProvider" in /cfg/config.json to one of "a", "b"; the relay picks the change up without a restart.',
    );
    // Also with an empty list: the notice says to add one.
    expect(noProviderNotice(parseConfig('{"providers":[]}'), 'c.json')).toContain('add a provider to "providers" in c.json and name it in "activeProvider"');
  });

  it('a file without providers keeps the built-in local provider active', () => {
    const config = parseConfig('{"workspaces":1}');
    expect(config.activeProvider).toBe('local');
    expect(activeOf(config)).toMatchObject({ ok: true, config: { id: 'local', kind: 'ollama' } });
  });

  it('the cloud provider as the active one: the notice says why and offers the local ones', () => {
    const config = parseConfig(JSON.stringify({ activeProvider: 'c', providers: [{ id: 'c', kind: 'cloud' }, { id: 'l', kind: 'ollama' }] }));
    expect(noProviderNotice(config, 'f.json')).toMatch(/^No provider is active: "activeProvider" is "c", the cloud provider, .* to one of "l";/);
  });

  it.each([
    ['not json', /not valid JSON/],
    ['[]', /JSON object/],
    ['{"providers":{}}', /"providers" must be an array/],
    ['{"providers":[{"id":"a","kind":"nope"}]}', /providers\[0\]\.kind must be one of/],
    ['{"providers":[{"id":"a","kind":"ollama"},{"id":"a","kind":"ollama"}]}', /share the id "a"/],
    ['{"providers":[{"id":"x","kind":"openai-compatible"}]}', /providers\[0\]\.baseUrl is required/],
    ['{"maxConcurrentStreams":0}', /maxConcurrentStreams/],
    ['{"maxConnections":0}', /"maxConnections" must be a whole number of 1 or more/],
    ['{"maxConnections":1.5}', /maxConnections/],
    ['{"workspaces":-1}', /workspaces/],
    ['{"activeProvider":3}', /activeProvider/],
  ])('%s is refused: %s', (text, message) => {
    expect(() => parseConfig(text)).toThrow(message);
  });
});

describe('a running relay re-reads its config file', () => {
  let ollamaA: OllamaStandIn;
  let ollamaB: OllamaStandIn;
  let t: TestRelay;
  let dir: string;
  let path: string;
  let file: ConfigFile;
  const warnings: string[] = [];

  const write = (active: string, extra: Record<string, unknown> = {}) => {
    // Save the way many editors do: a new file renamed over the old one.
    const temp = `${path}.tmp`;
    writeFileSync(
      temp,
      JSON.stringify({
        activeProvider: active,
        providers: [
          { id: 'a', kind: 'ollama', baseUrl: ollamaA.url, model: 'm' },
          { id: 'b', kind: 'ollama', baseUrl: ollamaB.url, model: 'm' },
          { id: 'deskrelay-cloud', kind: 'cloud' },
        ],
        ...extra,
      }),
    );
    renameSync(temp, path);
  };

  beforeAll(async () => {
    ollamaA = await startOllamaStandIn({ reply: ['from A'] });
    ollamaB = await startOllamaStandIn({ reply: ['from B'] });
    dir = mkdtempSync(join(tmpdir(), 'deskrelay-config-'));
    path = join(dir, 'config.json');
    write('a');
    file = new ConfigFile(path, { info() {}, warn: (m) => warnings.push(m), error() {} }, true);
    t = await startRelay({
      providers: file,
      workspaces: () => file.current().workspaces,
      maxConcurrentStreams: () => file.current().maxConcurrentStreams,
    });
  });
  afterAll(async () => {
    await t.close();
    await ollamaA.close();
    await ollamaB.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const reply = async () => parseEvents((await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody() })).body).at(-1);

  it('switches activeProvider on the next request, without a restart', async () => {
    expect(await reply()).toEqual({ type: 'done', content: 'from A' });
    write('b', { workspaces: 5 });
    expect(await reply()).toEqual({ type: 'done', content: 'from B' });
    expect((await send(t.url, '/v1/remote/info', { headers: bearer(t.token) })).json.workspaces).toBe(5);
    write('deskrelay-cloud');
    const refused = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody() });
    expect(refused.status).toBe(412);
    write('a');
    expect(await reply()).toEqual({ type: 'done', content: 'from A' });
  });

  it('looks at the file once per turn of the event loop: an edit is seen on the next turn, a switch at once', async () => {
    write('a', { allowPhoneProviderSwitch: true });
    await new Promise((r) => setImmediate(r));
    expect(file.activeId()).toBe('a');
    // The phone's switch writes the file and reads it back in the same turn: the answer and the
    // next request must see it.
    await file.switchTo('b');
    expect(file.activeId()).toBe('b');
    expect(await reply()).toEqual({ type: 'done', content: 'from B' });
    write('a', { allowPhoneProviderSwitch: true });
    await new Promise((r) => setImmediate(r));
    expect(file.activeId()).toBe('a');
    write('a');
  });

  it('keeps the last good config when an edit breaks the file, with a warning', async () => {
    write('b');
    expect(await reply()).toEqual({ type: 'done', content: 'from B' });
    writeFileSync(path, '{ "activeProvider": "a", oops');
    expect(await reply()).toEqual({ type: 'done', content: 'from B' });
    expect(warnings.some((w) => w.includes('is invalid') && w.includes('keeping the last good config'))).toBe(true);
    write('a');
    expect(await reply()).toEqual({ type: 'done', content: 'from A' });
  });
});

describe('parseConfig: "tunnel"', () => {
  it('names the tunnel kind and hostname serve starts; a named tunnel needs its hostname; a wrong kind is named', () => {
    expect(parseConfig('{}').tunnel).toBeUndefined();
    expect(parseConfig(JSON.stringify({ tunnel: { kind: 'ngrok' } })).tunnel).toEqual({ kind: 'ngrok' });
    expect(parseConfig(JSON.stringify({ tunnel: { kind: 'cloudflare-named', hostname: ' relay.example.com ' } })).tunnel).toEqual({ kind: 'cloudflare-named', hostname: 'relay.example.com' });
    expect(() => parseConfig(JSON.stringify({ tunnel: { kind: 'cloudflare-named' } }))).toThrow('"tunnel" of kind cloudflare-named needs "hostname" (its public hostname)');
    expect(() => parseConfig(JSON.stringify({ tunnel: { kind: 'frp' } }))).toThrow(/"tunnel" must be \{"kind": one of cloudflare-quick, cloudflare-named/);
    expect(() => parseConfig(JSON.stringify({ tunnel: { kind: 'ngrok', hostname: 3 } }))).toThrow('"tunnel.hostname" must be a non-empty string (the public hostname)');
  });
});
