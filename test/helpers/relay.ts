/** A real RelayServer on 127.0.0.1, port 0, with a temp config dir and a provider the test can switch. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RelayOptions, RelayServer } from '../../server/src/session/relay';
import type { ActiveProvider, KeySource, ProviderConfig } from '../../server/src/providers/types';
import type { Logger } from '../../server/src/logger';
import type { DoorRoute } from '../../server/src/doors/context';

export interface TestRelay {
  relay: RelayServer;
  url: string;
  token: string;
  dir: string;
  /** Sets what `providers.active()` answers from now on. */
  setActive(active: ActiveProvider): void;
  useProvider(config: ProviderConfig): void;
  setWorkspaces(n: number): void;
  logLines: string[];
  close(): Promise<void>;
}

export async function startRelay(overrides: Partial<RelayOptions> & { keys?: KeySource } = {}, extraRoutes: readonly DoorRoute[] = []): Promise<TestRelay> {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-test-'));
  let active: ActiveProvider = { ok: true, config: { id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:9', model: 'auto' } };
  let workspaces = 0;
  const logLines: string[] = [];
  const logger: Logger = {
    info: (m) => logLines.push(`info ${m}`),
    warn: (m) => logLines.push(`warn ${m}`),
    error: (m) => logLines.push(`error ${m}`),
  };
  const relay = new RelayServer({
    host: '127.0.0.1',
    port: 0,
    version: '9.8.7',
    providers: { active: () => active },
    keys: overrides.keys ?? { get: async () => undefined, howToSet: () => 'set the key' },
    workspaces: () => workspaces,
    maxConcurrentStreams: () => 8,
    configDir: dir,
    logger,
    onRequestLog: (e) => logLines.push(`request ${e.method} ${e.path} ${e.status} ${e.provider ?? '-'}`),
    ...overrides,
  }, extraRoutes);
  const started = await relay.start();
  return {
    relay,
    url: started.url,
    get token() {
      return relay.token ?? started.token;
    },
    dir,
    setActive: (a) => (active = a),
    useProvider: (config) => (active = { ok: true, config }),
    setWorkspaces: (n) => (workspaces = n),
    logLines,
    async close() {
      await relay.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
