/**
 * Local runners found by themselves: each known runner's default port on loopback is asked for
 * its model list (the same request listModels makes), all at once, with a short limit. Used by
 * `deskrelay serve` without a config file, `deskrelay doctor` and the extension's Add Provider.
 * Probes go to 127.0.0.1 only, never anywhere else.
 */
import { listModels } from './index';
import type { KeySource, ProviderConfig, ProviderKind } from './types';

export interface LocalRunner {
  /** Stable short name, as DESKRELAY_RUNNER_PORTS spells it. */
  name: string;
  /** What a person calls it. */
  title: string;
  kind: Extract<ProviderKind, 'ollama' | 'openai-compatible'>;
  port: number;
  /** The path after host:port that the provider's baseUrl carries (`/v1` for OpenAI-compatible servers). */
  path: string;
}

/** In the order they are preferred when more than one answers. */
export const LOCAL_RUNNERS: readonly LocalRunner[] = [
  { name: 'ollama', title: 'Ollama', kind: 'ollama', port: 11434, path: '' },
  { name: 'lm-studio', title: 'LM Studio', kind: 'openai-compatible', port: 1234, path: '/v1' },
  { name: 'llama.cpp', title: 'llama.cpp server', kind: 'openai-compatible', port: 8080, path: '/v1' },
  { name: 'jan', title: 'Jan', kind: 'openai-compatible', port: 1337, path: '/v1' },
  { name: 'vllm', title: 'vLLM', kind: 'openai-compatible', port: 8000, path: '/v1' },
];

/**
 * `ollama=41001,lm-studio=41002`: probe only these runners, on these loopback ports (tests, or a
 * runner moved off its default port). Set but empty: probe nothing.
 */
export const RUNNER_PORTS_VARIABLE = 'DESKRELAY_RUNNER_PORTS';

/** The runners to probe: the defaults, or exactly those DESKRELAY_RUNNER_PORTS names. */
export function runnersToProbe(env: NodeJS.ProcessEnv = process.env): LocalRunner[] {
  const spec = env[RUNNER_PORTS_VARIABLE];
  if (spec === undefined) return [...LOCAL_RUNNERS];
  const out: LocalRunner[] = [];
  for (const part of spec.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^([a-z.-]+)=(\d{1,5})$/i.exec(part);
    const runner = m && LOCAL_RUNNERS.find((r) => r.name === m[1]!.toLowerCase());
    const port = m ? Number(m[2]) : NaN;
    if (!runner || !(port > 0 && port < 65536)) {
      throw new Error(`${RUNNER_PORTS_VARIABLE}: "${part}" is not <runner>=<port> (runners: ${LOCAL_RUNNERS.map((r) => r.name).join(', ')})`);
    }
    out.push({ ...runner, port });
  }
  return out;
}

export interface DetectedRunner {
  runner: LocalRunner;
  /** A provider record for it, `model: "auto"`, id `local` unless given. */
  config: ProviderConfig;
  models: string[];
}

export const runnerUrl = (r: LocalRunner) => `http://127.0.0.1:${r.port}${r.path}`;

/** A provider record for a runner (`model: "auto"` unless given). */
export function runnerConfig(r: LocalRunner, id = 'local', model = 'auto'): ProviderConfig {
  return { id, kind: r.kind, baseUrl: runnerUrl(r), model };
}

const NO_KEYS: KeySource = { get: async () => undefined, howToSet: () => '' };

/**
 * Every runner that answers its model list, in preference order. A runner that is down, slow
 * past `timeoutMs`, or answers something else is left out.
 */
export async function detectRunners(opts: { runners?: LocalRunner[]; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<DetectedRunner[]> {
  const runners = opts.runners ?? runnersToProbe(opts.env);
  const timeoutMs = opts.timeoutMs ?? 1500;
  const found = await Promise.all(
    runners.map(async (runner): Promise<DetectedRunner | undefined> => {
      const config = runnerConfig(runner);
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), timeoutMs);
      try {
        const models = await listModels(config, { keys: NO_KEYS, idleTimeoutMs: timeoutMs }, controller.signal);
        return { runner, config, models };
      } catch {
        return undefined;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return found.filter((f): f is DetectedRunner => f !== undefined);
}
