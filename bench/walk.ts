// Bundled and run by bench/walk.mjs (read there what it measures).
import { Session } from 'node:inspector';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeWorkspace } from '../server/src/agent/hosts/node';
import { startRelay } from '../test/helpers/relay';
import { startOllamaStandIn } from '../test/fixtures/providers/ollama';
import { startScriptedModel } from '../test/fixtures/providers/scripted';

interface Coverage {
  result: { url: string; functions: { functionName: string; ranges: { startOffset: number; count: number }[] }[] }[];
}

const session = new Session();
session.connect();
const post = <T = unknown>(method: string, params: object = {}) =>
  new Promise<T>((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result as T))));

const ask = { messages: [{ role: 'user', content: 'hi' }] };
const DOORS: { name: string; path: string; body: object }[] = [
  { name: 'SPEC', path: '/v1/chat/stream', body: ask },
  { name: 'OpenAI, streamed', path: '/v1/chat/completions', body: { model: 'x', stream: true, ...ask } },
  { name: 'OpenAI, whole', path: '/v1/chat/completions', body: { model: 'x', ...ask } },
  { name: 'Ollama', path: '/api/chat', body: { model: 'x', ...ask } },
];

async function main(): Promise<void> {
  const bundlePath = process.argv[2]!;
  const provider = await startOllamaStandIn();
  const relay = await startRelay();
  relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: provider.url, model: 'auto' });
  // Read once: the relay's own getter is the harness's step, not the request's.
  const authorization = `Bearer ${relay.token}`;
  const send = async (door: (typeof DOORS)[number]) => {
    const res = await fetch(relay.url + door.path, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(door.body) });
    await res.text();
    return res.status;
  };
  // Warm: first-use work (lazy modules, pools) is not the request's walk.
  for (const door of DOORS) for (let i = 0; i < 3; i++) await send(door);
  // esbuild marks where each module starts in a bundle that is not minified.
  const bundle = readFileSync(bundlePath, 'utf8');
  const marks = [...bundle.matchAll(/^\/\/ (\S+\.(?:ts|js|mjs|cjs))$/gm)].map((m) => ({ at: m.index!, file: m[1]! }));
  const fileAt = (offset: number) => marks.findLast((m) => m.at <= offset)?.file ?? '';
  await post('Profiler.enable');
  await post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  /** Runs `work` with the counts reset before it; prints the files of server/src whose functions ran. */
  const walk = async (title: (result: string) => string, work: () => Promise<string>) => {
    await post('Profiler.takePreciseCoverage'); // resets the counts
    const outcome = await work();
    const { result } = await post<Coverage>('Profiler.takePreciseCoverage');
    const files = new Map<string, string[]>();
    for (const fn of result.find((s) => s.url.endsWith(bundlePath.split('/').pop()!))?.functions ?? []) {
      const range = fn.ranges[0];
      if (!range || range.count === 0 || range.startOffset === 0) continue;
      const file = fileAt(range.startOffset);
      if (!file.startsWith('server/src/')) continue;
      files.set(file, [...(files.get(file) ?? []), fn.functionName || '(anonymous)']);
    }
    console.log(`\n${title(outcome)}, ${files.size} files of server/src ran code`);
    for (const file of [...files.keys()].sort()) console.log(`  ${file.slice('server/src/'.length)}  ${[...new Set(files.get(file))].slice(0, 6).join(', ')}`);
  };
  for (const door of DOORS) await walk((status) => `${door.name}: POST ${door.path} → ${status}`, async () => String(await send(door)));
  // A paired phone sends its own device token (the pairing token is used once, to register).
  const paired = await fetch(`${relay.url}/v1/devices`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Walk phone' }) });
  const device = `Bearer ${((await paired.json()) as { token: string }).token}`;
  const asPhone = async () => {
    const res = await fetch(`${relay.url}/v1/chat/stream`, { method: 'POST', headers: { authorization: device, 'content-type': 'application/json' }, body: JSON.stringify(ask) });
    await res.text();
    return String(res.status);
  };
  for (let i = 0; i < 3; i++) await asPhone();
  await walk((status) => `SPEC from a paired phone (its device token): POST /v1/chat/stream → ${status}`, asPhone);
  await relay.close();
  await provider.close();
  await agentWalk(walk);
}

/**
 * An agent message through one approval: the session is open and idle and the phone follows its
 * events; the message asks the model, the model asks to write a file, the approval is shown, the
 * phone allows it, the file is written, the model is told and finishes. Token approvals (a
 * phone's signature check adds store/deviceKeys.ts's verifySigned).
 */
async function agentWalk(walk: (title: (r: string) => string, work: () => Promise<string>) => Promise<void>): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'deskrelay-walk-agent-'));
  const model = await startScriptedModel();
  const workspaces = [new NodeWorkspace({ folder, configDir: '/nonexistent-config' })];
  const relay = await startRelay({ agent: { workspaces: () => workspaces, approvals: () => 'token' } });
  relay.useProvider({ id: 'scripted', kind: 'openai-compatible', baseUrl: `${model.url}/v1`, model: 'gpt-4o' });
  const headers = { authorization: `Bearer ${relay.token}`, 'content-type': 'application/json' };
  const call = async (path: string, body?: unknown) => {
    const res = await fetch(relay.url + path, { method: body === undefined ? 'GET' : 'POST', headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
  const created = await call('/v1/agent/sessions', { prompt: 'hello', folder: workspaces[0]!.name });
  const id = created.json.id as string;
  model.script([{ text: ['Hello.'] }]);
  // The phone's event stream, read as it arrives.
  const events = await fetch(`${relay.url}/v1/agent/sessions/${id}/events`, { headers });
  const reader = events.body!.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  const until = async (check: (text: string) => RegExpMatchArray | null) => {
    for (;;) {
      const hit = check(seen);
      if (hit) return hit;
      const { value, done } = await reader.read();
      if (done) throw new Error('the event stream ended');
      seen += decoder.decode(value, { stream: true });
    }
  };
  let turns = 0;
  const oneTurn = async () => {
    turns++;
    model.script([{ calls: [{ name: 'write_file', arguments: { path: `walk-${turns}.txt`, content: 'x\n' } }] }, { text: ['Written.'] }]);
    const from = seen.length;
    const sent = await call(`/v1/agent/sessions/${id}/messages`, { text: `write walk-${turns}.txt` });
    const approval = await until((t) => t.slice(from).match(/"type":"approval"[^\n]*?"callId":"([^"]+)"/));
    const decided = await call(`/v1/agent/sessions/${id}/approvals/${approval[1]}`, { decision: 'allow' });
    await until((t) => t.slice(from).match(/"type":"status","status":"idle"/));
    return `${sent.status}, decision ${decided.status}`;
  };
  await until((t) => t.match(/"type":"status","status":"idle"/));
  // Warm: first-use work is not the message's walk.
  for (let i = 0; i < 3; i++) await oneTurn();
  await walk((r) => `Agent: POST …/messages → one approval → allowed → idle (${r})`, oneTurn);
  if (model.failures.length) console.error(`the scripted model saw: ${model.failures.join('; ')}`);
  await reader.cancel();
  await relay.close();
  await model.close();
  rmSync(folder, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
