/**
 * `deskrelay serve` without a config file: the first local runner that answers on its default
 * loopback port becomes provider "local" (model "auto"), and the user is told which and how to
 * pin it. Nothing answering keeps today's default (Ollama on 11434) and says so.
 */
import { existsSync } from 'node:fs';
import { detectRunners, LOCAL_RUNNERS, runnersToProbe, runnerUrl, type DetectedRunner } from '../providers/detect';
import type { ActiveProvider, ProviderConfig, ProviderSource } from '../providers/types';
import type { ConfigFile } from './config';

export interface AutoDetected {
  /** The runner in use, when one answered. */
  detected?: DetectedRunner;
  /** What serve prints about it: one line. */
  notice: string;
}

export async function detectDefaultRunner(path: string, env: NodeJS.ProcessEnv = process.env): Promise<AutoDetected> {
  const runners = runnersToProbe(env);
  const [first] = await detectRunners({ runners });
  if (first) {
    const pin = JSON.stringify({ activeProvider: 'local', providers: [first.config] });
    const models = first.models.length ? `${first.models.length} model${first.models.length === 1 ? '' : 's'}, "auto" picks ${JSON.stringify(first.models[0])}` : 'no models installed yet';
    return {
      detected: first,
      notice: `No config file at ${path}: found ${first.runner.title} at ${runnerUrl(first.runner)} (${models}) and using it. To pin it, write this to ${path}: ${pin}`,
    };
  }
  const probed = (runners.length ? runners : []).map((r) => `${r.title} ${r.port}`).join(', ') || 'none probed';
  const fallback = LOCAL_RUNNERS[0]!;
  return {
    notice: `No config file at ${path}, and no local runner answered on 127.0.0.1 (${probed}): using the default, ${fallback.title} at ${runnerUrl(fallback)}. Start a runner, or write ${path} to name a provider.`,
  };
}

/**
 * The config file's providers, with the built-in default "local" replaced by the detected runner
 * while no config file exists. Once the user writes one, it alone counts.
 */
export class DetectedDefaultSource implements ProviderSource {
  constructor(
    private readonly file: ConfigFile,
    private readonly detected: ProviderConfig,
  ) {}

  private swap(p: ProviderConfig): ProviderConfig {
    return p.id === this.detected.id && !existsSync(this.file.path) ? this.detected : p;
  }

  active(): ActiveProvider {
    const a = this.file.active();
    return a.ok ? { ok: true, config: this.swap(a.config) } : a;
  }

  list(): ProviderConfig[] {
    const file = this.file as ProviderSource;
    return (file.list?.() ?? this.file.current().providers).map((p) => this.swap(p));
  }

  activeId(): string {
    return this.file.current().activeProvider;
  }

  canSwitch(): boolean {
    return (this.file as ProviderSource).canSwitch?.() ?? false;
  }

  async switchTo(id: string, model?: string): Promise<void> {
    await (this.file as ProviderSource).switchTo?.(id, model);
  }
}
