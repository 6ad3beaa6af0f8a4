// Bundled and run by bench/walk.mjs (read there what it measures).
import { Session } from 'node:inspector';
import { readFileSync } from 'node:fs';
import { startRelay } from '../test/helpers/relay';
import { startOllamaStandIn } from '../test/fixtures/providers/ollama';

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
  for (const door of DOORS) {
    await post('Profiler.takePreciseCoverage'); // resets the counts
    const status = await send(door);
    const { result } = await post<Coverage>('Profiler.takePreciseCoverage');
    const files = new Map<string, string[]>();
    for (const fn of result.find((s) => s.url.endsWith(bundlePath.split('/').pop()!))?.functions ?? []) {
      const range = fn.ranges[0];
      if (!range || range.count === 0 || range.startOffset === 0) continue;
      const file = fileAt(range.startOffset);
      if (!file.startsWith('server/src/')) continue;
      files.set(file, [...(files.get(file) ?? []), fn.functionName || '(anonymous)']);
    }
    console.log(`\n${door.name}: POST ${door.path} → ${status}, ${files.size} files of server/src ran code`);
    for (const file of [...files.keys()].sort()) console.log(`  ${file.slice('server/src/'.length)}  ${[...new Set(files.get(file))].slice(0, 6).join(', ')}`);
  }
  await relay.close();
  await provider.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
