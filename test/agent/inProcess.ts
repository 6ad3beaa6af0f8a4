/** The agent door in-process: a real RelayServer on loopback with NodeWorkspaces and the scripted model, driven over HTTP. */
import { expect } from 'vitest';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import type { AgentHost } from '../../server/src/agent/host';
import type { RelayOptions } from '../../server/src/session/relay';
import type { ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';

export interface AgentRelay extends TestRelay {
  post(path: string, body: unknown): ReturnType<typeof send>;
  get(path: string): ReturnType<typeof send>;
  /** Creates a session; its id. */
  start(prompt: string, extra?: Record<string, unknown>): Promise<string>;
  /** Polls the snapshot until `check` holds. */
  until(id: string, check: (snapshot: any) => boolean, what: string): Promise<any>;
}

export async function startAgentRelay(folders: string[], model: ScriptedModel, options: Partial<RelayOptions> & { agentHost?: Partial<AgentHost> } = {}): Promise<AgentRelay> {
  const workspaces = folders.map((folder) => new NodeWorkspace({ folder, configDir: options.configDir ?? '/nonexistent-config' }));
  const { agentHost, ...rest } = options;
  // These suites drive sessions, not who may: token approvals (any token, unsigned decisions) keep
  // them on what they test; signedDecisions and the CLI suites hold the device rules.
  const relay = await startRelay({ agent: { workspaces: () => workspaces, approvals: () => 'token', ...agentHost }, ...rest });
  relay.useProvider({ id: 'scripted', kind: 'openai-compatible', baseUrl: `${model.url}/v1`, model: 'gpt-4o' });
  const headers = () => ({ ...bearer(relay.token), 'Content-Type': 'application/json' });
  const self: AgentRelay = Object.assign(relay, {
    post: (path: string, body: unknown) => send(relay.url, path, { method: 'POST', headers: headers(), body: JSON.stringify(body) }),
    get: (path: string) => send(relay.url, path, { headers: bearer(relay.token) }),
    async start(prompt: string, extra: Record<string, unknown> = {}) {
      const created = await self.post('/v1/agent/sessions', { prompt, ...extra });
      expect(created.status, created.body).toBe(201);
      return created.json.id as string;
    },
    async until(id: string, check: (snapshot: any) => boolean, what: string) {
      const started = Date.now();
      for (;;) {
        const snap = (await self.get(`/v1/agent/sessions/${id}`)).json;
        if (check(snap)) return snap;
        if (Date.now() - started > 15_000) throw new Error(`timed out waiting for ${what}; model failures: ${JSON.stringify(model.failures)}; snapshot: ${JSON.stringify(snap).slice(0, 2000)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  });
  return self;
}
