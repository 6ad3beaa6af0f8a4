/** SPEC §2.1 / §4.1 / §4.3 and CONTRACT §4: the info record and the health probe. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';

let t: TestRelay;
const saved = { HOSTNAME: process.env.HOSTNAME, COMPUTERNAME: process.env.COMPUTERNAME };

beforeAll(async () => {
  t = await startRelay();
});
afterAll(() => t.close());
afterEach(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

describe('GET /v1/health', () => {
  it.each([{}, bearer('wrong'), { Authorization: 'garbage' }])('answers without auth, ignoring any Authorization header (%o)', async (headers) => {
    const reply = await send(t.url, '/v1/health', { headers });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(reply.json).toEqual({ status: 'ok', service: 'deskrelay', version: '9.8.7' });
  });
});

describe('GET /v1/remote/info', () => {
  it('returns exactly the five SPEC fields with their types', async () => {
    const reply = await send(t.url, '/v1/remote/info', { headers: bearer(t.token) });
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.json).sort()).toEqual(['hostname', 'providerConfigured', 'service', 'version', 'workspaces']);
    expect(reply.json.service).toBe('deskrelay');
    expect(reply.json.version).toBe('9.8.7');
    expect(typeof reply.json.hostname).toBe('string');
    expect(reply.json.providerConfigured).toBe(true);
    expect(Number.isInteger(reply.json.workspaces)).toBe(true);
  });

  it('takes the hostname from HOSTNAME, else COMPUTERNAME, else deskrelay-desktop, at request time', async () => {
    const host = async () => (await send(t.url, '/v1/remote/info', { headers: bearer(t.token) })).json.hostname;
    process.env.HOSTNAME = 'studio-pc';
    process.env.COMPUTERNAME = 'WIN-BOX';
    expect(await host()).toBe('studio-pc');
    delete process.env.HOSTNAME;
    expect(await host()).toBe('WIN-BOX');
    delete process.env.COMPUTERNAME;
    expect(await host()).toBe('deskrelay-desktop');
  });

  it('computes workspaces and providerConfigured per request', async () => {
    const info = async () => (await send(t.url, '/v1/remote/info', { headers: bearer(t.token) })).json;
    t.setWorkspaces(3);
    expect((await info()).workspaces).toBe(3);
    t.setWorkspaces(0);
    expect((await info()).workspaces).toBe(0);
    t.setActive({ ok: false, reason: 'cloud', id: 'deskrelay-cloud' });
    expect((await info()).providerConfigured).toBe(false);
    t.useProvider({ id: 'local', kind: 'ollama', model: 'auto' });
    expect((await info()).providerConfigured).toBe(true);
  });

  it('logs one line per request with method, path and status, never the token or the query', async () => {
    await send(t.url, `/v1/remote/info?token=${t.token}`, { headers: bearer(t.token) });
    expect(t.logLines).toContain('request GET /v1/remote/info 200 -');
    expect(t.logLines.join('\n')).not.toContain(t.token);
  });
});
