import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdapter, describeProvider, isAbortError, ProviderError, validateProviderConfig } from '../../server/src/providers';
import { redact } from '../../server/src/providers/errors';
import { toConversation } from '../../server/src/providers/turns';
import type { ProviderConfig } from '../../server/src/providers/types';
import { startOpenAiStandIn } from '../fixtures/providers/openai';
import { startStandIn } from '../fixtures/providers/standin';
import { deps, FAKE_KEY, run } from './helpers';

describe('createAdapter', () => {
  it('refuses the cloud kind, which the core answers with 412 before calling it', () => {
    expect(() => createAdapter({ id: 'deskrelay-cloud', kind: 'cloud' }, deps())).toThrow(/412/);
  });

  it('builds an adapter for every other kind, labelled like describeProvider', () => {
    const configs: ProviderConfig[] = [
      { id: 'a', kind: 'ollama' },
      { id: 'b', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:1234/v1' },
      { id: 'c', kind: 'anthropic', model: 'claude-sonnet-4-5' },
      { id: 'd', kind: 'gemini', model: 'gemini-2.5-flash' },
    ];
    for (const c of configs) expect(createAdapter(c, deps()).label).toBe(describeProvider(c));
  });
});

describe('describeProvider', () => {
  it('names the kind and the base URL in use, defaults included', () => {
    expect(describeProvider({ id: 'a', kind: 'ollama' })).toBe('Ollama at http://127.0.0.1:11434');
    expect(describeProvider({ id: 'b', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:1234/v1/' })).toBe(
      'OpenAI-compatible server at http://127.0.0.1:1234/v1',
    );
    expect(describeProvider({ id: 'c', kind: 'anthropic' })).toBe('Anthropic at https://api.anthropic.com');
    expect(describeProvider({ id: 'd', kind: 'gemini' })).toBe('Gemini at https://generativelanguage.googleapis.com');
  });
});

describe('validateProviderConfig', () => {
  const bad = (x: unknown) => () => validateProviderConfig(x, 'providers[2]');

  it('accepts every record of the contract example and keeps only known fields', () => {
    expect(validateProviderConfig({ id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:11434', model: 'auto', extra: 1 }, 'p')).toEqual({
      id: 'local',
      kind: 'ollama',
      baseUrl: 'http://127.0.0.1:11434',
      model: 'auto',
    });
    expect(
      validateProviderConfig(
        { id: 'openrouter', kind: 'openai-compatible', baseUrl: 'https://openrouter.ai/api/v1', model: 'deepseek/deepseek-r1', apiKeyEnv: 'OPENROUTER_API_KEY' },
        'p',
      ).apiKeyEnv,
    ).toBe('OPENROUTER_API_KEY');
    expect(validateProviderConfig({ id: 'claude', kind: 'anthropic', model: 'claude-sonnet-4-5', apiKeyEnv: 'ANTHROPIC_API_KEY', maxTokens: 4096 }, 'p').maxTokens).toBe(4096);
    expect(validateProviderConfig({ id: 'deskrelay-cloud', kind: 'cloud' }, 'p')).toEqual({ id: 'deskrelay-cloud', kind: 'cloud' });
  });

  it('names the first bad field', () => {
    expect(bad(null)).toThrow('providers[2] must be an object');
    expect(bad({ id: '', kind: 'ollama' })).toThrow('providers[2].id must be a non-empty string');
    expect(bad({ id: 'x', kind: 'openai' })).toThrow('providers[2].kind must be one of ollama, openai-compatible, anthropic, gemini, vscode-lm, cloud');
    expect(bad({ id: 'x', kind: 'ollama', baseUrl: 'ftp://host' })).toThrow('providers[2].baseUrl must be an http(s) URL');
    expect(bad({ id: 'x', kind: 'ollama', baseUrl: 'localhost:11434' })).toThrow('providers[2].baseUrl must be an http(s) URL');
    expect(bad({ id: 'x', kind: 'openai-compatible' })).toThrow(/^providers\[2\]\.baseUrl is required for kind openai-compatible/);
    expect(bad({ id: 'x', kind: 'anthropic' })).toThrow(/^providers\[2\]\.model must name a model for kind anthropic/);
    expect(bad({ id: 'x', kind: 'gemini', model: 'auto' })).toThrow(/^providers\[2\]\.model must name a model for kind gemini/);
    expect(bad({ id: 'x', kind: 'ollama', model: 3 })).toThrow('providers[2].model must be a non-empty string');
    expect(bad({ id: 'x', kind: 'ollama', apiKeyEnv: 'not a name' })).toThrow(/^providers\[2\]\.apiKeyEnv must be an environment variable name/);
    expect(bad({ id: 'x', kind: 'ollama', maxTokens: 0 })).toThrow('providers[2].maxTokens must be a positive integer');
    expect(bad({ id: 'x', kind: 'ollama', contextLength: 100 })).toThrow("providers[2].contextLength must be the model's context length in tokens (an integer, at least 256)");
    expect(validateProviderConfig({ id: 'x', kind: 'ollama', contextLength: 8192 }, 'providers[0]').contextLength).toBe(8192);
  });

  it('refuses a key in the record without repeating it', () => {
    let message = '';
    try {
      validateProviderConfig({ id: 'x', kind: 'anthropic', model: 'm', apiKey: FAKE_KEY }, 'providers[0]');
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/^providers\[0\] must not hold an API key/);
    expect(message).not.toContain(FAKE_KEY);
  });
});

describe('network failures', () => {
  it('names a host that does not resolve', async () => {
    const out = await run(createAdapter({ id: 'x', kind: 'ollama', baseUrl: 'http://deskrelay-no-such-host.invalid:11434', model: 'm' }, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toMatch(
      /^Ollama at http:\/\/deskrelay-no-such-host\.invalid:11434 is not reachable \((ENOTFOUND|EAI_AGAIN|EAI_FAIL)\): its host name could not be resolved/,
    );
  });

  const tls = (() => {
    try {
      const dir = mkdtempSync(join(tmpdir(), 'deskrelay-tls-'));
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
        '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
      return { dir, key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
    } catch {
      return undefined;
    }
  })();
  afterAll(() => tls && rmSync(tls.dir, { recursive: true, force: true }));

  it.skipIf(!tls)('says the secure connection failed on an untrusted certificate', async () => {
    const server = createServer({ key: tls!.key, cert: tls!.cert }, (_req, res) => res.end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      const out = await run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: `https://127.0.0.1:${port}/v1`, model: 'm' }, deps()));
      expect(out.error).toBeInstanceOf(ProviderError);
      expect(out.error!.message).toBe(
        `OpenAI-compatible server at https://127.0.0.1:${port}/v1 is not reachable (DEPTH_ZERO_SELF_SIGNED_CERT): the secure connection failed; check the server's certificate, or whether the base URL should use http://`,
      );
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('says the secure connection failed when https:// points at a plain HTTP server', async () => {
    const oa = await startOpenAiStandIn();
    try {
      const url = oa.url.replace('http://', 'https://');
      const out = await run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: url, model: 'm' }, deps()));
      expect(out.error).toBeInstanceOf(ProviderError);
      expect(out.error!.message).toMatch(/is not reachable \(\w+\)/);
      expect(out.error!.message).toMatch(/secure connection failed|EPROTO/);
    } finally {
      await oa.close();
    }
  });

  it('reports an abort before the stream starts as an abort, sending nothing', async () => {
    const oa = await startOpenAiStandIn();
    try {
      const ctl = new AbortController();
      ctl.abort();
      const out = await run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: oa.url, model: 'm' }, deps()), undefined, ctl.signal);
      expect(isAbortError(out.error)).toBe(true);
      expect(oa.requests).toHaveLength(0);
    } finally {
      await oa.close();
    }
  });

  it('redacts an echoed key from a mid-stream error', async () => {
    const oa = await startOpenAiStandIn({ mode: 'mid-stream-error', errorMessage: `quota exceeded for key ${FAKE_KEY}` });
    try {
      const out = await run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: oa.url, model: 'm' }, deps({ key: FAKE_KEY })));
      expect(out.error).toBeInstanceOf(ProviderError);
      expect(out.error!.message).toBe(`OpenAI-compatible server at ${oa.url} reported an error: quota exceeded for key [redacted]`);
    } finally {
      await oa.close();
    }
  });
});

describe('message normalisation', () => {
  it('drops empty turns, merges neighbours and opens with the user', () => {
    expect(toConversation([{ role: 'system', content: 'S' }])).toEqual({ system: 'S', turns: [{ role: 'user', content: 'Continue.' }] });
    expect(
      toConversation([
        { role: 'user', content: '' },
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'assistant', content: 'c' },
      ]),
    ).toEqual({ turns: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b\n\nc' }] });
  });
});

describe('redact', () => {
  it('removes every occurrence of the key', () => {
    expect(redact(`a ${FAKE_KEY} b ${FAKE_KEY}`, FAKE_KEY)).toBe('a [redacted] b [redacted]');
    expect(redact('nothing here', undefined)).toBe('nothing here');
  });
});

describe('key store failures', () => {
  it('become a ProviderError that says how to set the key, without the store\'s own text', async () => {
    const failing = deps();
    failing.keys.get = async () => {
      throw new Error(`keychain locked, last value ${FAKE_KEY}`);
    };
    const out = await run(createAdapter({ id: 'c', kind: 'anthropic', baseUrl: 'http://127.0.0.1:9', model: 'm', apiKeyEnv: 'ANTHROPIC_API_KEY' }, failing));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe('the API key for Anthropic at http://127.0.0.1:9 could not be read; set the ANTHROPIC_API_KEY environment variable');
  });
});

describe('a connection cut mid-reply', () => {
  it('is a failure that says the provider dropped the connection, after the text that came', async () => {
    const server = await startStandIn((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
      res.write('{"model":"m","created_at":"2025-06-05T10:11:12Z","message":{"role":"assistant","content":"Hel"},"done":false}\n');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    try {
      const out = await run(createAdapter({ id: 'x', kind: 'ollama', baseUrl: server.url, model: 'm' }, deps()));
      expect(out.text).toBe('Hel');
      expect(out.error).toBeInstanceOf(ProviderError);
      expect(out.error!.message).toMatch(new RegExp(`^Ollama at ${server.url} dropped the connection in the middle of the reply \\(.+\\)$`));
    } finally {
      await server.close();
    }
  });
});
