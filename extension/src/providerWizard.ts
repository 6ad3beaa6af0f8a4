/**
 * Providers without editing JSON: "DeskRelay: Add Provider" (a quick pick of kinds; local runners
 * found by probing their default ports on loopback, their models listed; hosted kinds' keys asked
 * in a password box and checked with one cheap request before anything is saved), "Remove
 * Provider" and "Edit Provider Model". Each command also takes its answers as an argument (tests
 * and other extensions); a missing answer is asked.
 */
import * as vscode from 'vscode';
import { describeProvider, detectRunners, listModels, runnersToProbe, type DetectedRunner, type ProviderConfig, type ProviderKind } from '../../server/src';
import type { OutputLog } from './log';
import type { SecretKeySource } from './secrets';
import { activeProviderId, providerEntries, SECTION, setActiveProviderId, setTranscriptionChoice, transcriptionChoice } from './settings';
import { allowVsCodeModels, modelSelector, modelTitle, selectModels } from './vscodeLm';

const t = vscode.l10n.t;
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** What Add Provider offers. `local` is every runner found on loopback; `openai` is OpenAI's own API. */
export type AddKind = 'local' | 'openai-compatible' | 'openai' | 'anthropic' | 'gemini' | 'vscode-lm';

/** Answers given up front; the rest is asked. */
export interface AddProviderAnswers {
  kind?: AddKind;
  /** local: the runner's name (`ollama`, `lm-studio`, …), as LOCAL_RUNNERS spells it. */
  runner?: string;
  /** openai-compatible (and, for tests, a hosted kind's stand-in): the base URL. */
  baseUrl?: string;
  key?: string;
  model?: string;
  id?: string;
  makeActive?: boolean;
  /**
   * OpenAI-compatible kinds: the model that transcribes the phone's voice messages with this
   * provider (deskrelay.transcription); null for none. Asked when the kind was asked.
   */
  transcriptionModel?: string | null;
}

export interface AddProviderResult {
  id?: string;
  config?: ProviderConfig;
  /** The models the provider listed (for vscode-lm: VS Code's). */
  models?: string[];
  active?: boolean;
  /** The transcription model set for it (deskrelay.transcription), if one was. */
  transcription?: string;
  /** Why nothing was added (also shown to the user); undefined when the user cancelled. */
  error?: string;
}

const HOSTED: Record<'openai' | 'anthropic' | 'gemini', { kind: ProviderKind; baseUrl?: string; id: string }> = {
  openai: { kind: 'openai-compatible', baseUrl: 'https://api.openai.com/v1', id: 'openai' },
  anthropic: { kind: 'anthropic', id: 'anthropic' },
  gemini: { kind: 'gemini', id: 'gemini' },
};

/** A key used once, for the check before saving. */
const fixedKey = (key: string | undefined) => ({ get: async () => key, howToSet: () => t('enter another key') });

export class ProviderWizard {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly keys: SecretKeySource,
    private readonly log: OutputLog,
  ) {}

  async addProvider(given: AddProviderAnswers = {}): Promise<AddProviderResult> {
    const a: AddProviderAnswers = typeof given === 'object' && given !== null ? { ...given } : {};
    const kind = a.kind ?? (await this.pickKind());
    if (!kind) return {};
    let config: ProviderConfig;
    let models: string[];
    let key: string | undefined;
    if (kind === 'local') {
      const found = await this.findRunner(a);
      if (!isRunner(found)) return found ?? {};
      config = { ...found.config };
      models = found.models;
    } else if (kind === 'vscode-lm') {
      const all = await vscode.lm.selectChatModels();
      models = all.map(modelSelector);
      if (!all.length) return this.fail(t("VS Code offers no language models right now. Install and sign in to an extension that provides them (such as GitHub Copilot Chat), then try again."));
      config = { id: '', kind: 'vscode-lm' };
      if (a.model === undefined) {
        const pick = await vscode.window.showQuickPick(
          all.map((m) => ({ label: m.name || m.id, description: `${m.vendor}/${m.family}`, detail: m.id, model: modelSelector(m) })),
          { title: t('DeskRelay: Add Provider — VS Code model'), placeHolder: t('Which of VS Code\'s models should the phone use?') },
        );
        if (!pick) return {};
        a.model = pick.model;
      }
    } else {
      const hosted = kind === 'openai-compatible' ? undefined : HOSTED[kind];
      let baseUrl = a.baseUrl ?? hosted?.baseUrl;
      if (kind === 'openai-compatible' && baseUrl === undefined) {
        baseUrl = await vscode.window.showInputBox({
          title: t('DeskRelay: Add Provider — server URL'),
          prompt: t('The base URL of the OpenAI-compatible server, with its /v1'),
          value: 'http://127.0.0.1:1234/v1',
          ignoreFocusOut: true,
          validateInput: (v) => (/^https?:\/\/\S+$/.test(v.trim()) ? undefined : t('An http:// or https:// URL')),
        });
        if (baseUrl === undefined) return {};
        baseUrl = baseUrl.trim();
      }
      config = { id: '', kind: hosted?.kind ?? 'openai-compatible', ...(baseUrl ? { baseUrl } : {}) };
      const checked = await this.checkKey(config, kind !== 'openai-compatible', a.key);
      if (!checked || !('models' in checked)) return checked ?? {};
      key = checked.key;
      models = checked.models;
    }

    // The model.
    const listsModels = config.kind === 'ollama' || config.kind === 'openai-compatible' || config.kind === 'vscode-lm';
    let model = a.model;
    if (model === undefined) {
      const items = [
        ...(listsModels ? [{ label: 'auto', description: t('the first model it lists, whatever is installed') }] : []),
        ...models.map((m) => ({ label: m })),
      ];
      if (!items.length) return this.fail(t('{0} lists no models. Install or load one, then try again.', describeProvider(config)));
      const pick = await vscode.window.showQuickPick(items, { title: t('DeskRelay: Add Provider — model'), placeHolder: t('{0} models listed', models.length) });
      if (!pick) return {};
      model = pick.label;
    }
    if (model !== 'auto' || listsModels) config.model = model;

    // The id.
    const taken = new Set(providerEntries().map((e) => e.id));
    const base = a.id ?? this.suggestedId(kind, a.runner ?? (config.kind === 'ollama' ? 'ollama' : undefined));
    let id = a.id;
    if (id === undefined) {
      let suggestion = base;
      for (let n = 2; taken.has(suggestion); n++) suggestion = `${base}-${n}`;
      id = await vscode.window.showInputBox({
        title: t('DeskRelay: Add Provider — name'),
        prompt: t('A short name for this provider (its id in the deskrelay.providers setting)'),
        value: suggestion,
        ignoreFocusOut: true,
        validateInput: (v) => (!v.trim() ? t('Enter a name') : taken.has(v.trim()) ? t('"{0}" is already a provider', v.trim()) : undefined),
      });
      if (id === undefined) return {};
      id = id.trim();
    }
    if (!id || taken.has(id)) return this.fail(t('DeskRelay: there is already a provider "{0}".', id));
    config.id = id;

    // Save: the key in SecretStorage, the record in the user's settings.
    if (key) await this.keys.set(id, key);
    const current = vscode.workspace.getConfiguration(SECTION).get<unknown[]>('providers', []);
    await vscode.workspace.getConfiguration(SECTION).update('providers', [...(Array.isArray(current) ? current : []), config], vscode.ConfigurationTarget.Global);
    this.log.info(`provider added: ${id} (${describeProvider(config)}${config.model ? `, model ${config.model}` : ''})${key ? ', key stored in secret storage' : ''}`);

    let active = a.makeActive;
    if (active === undefined) {
      const useNow = t('Use It Now');
      const choice = await vscode.window.showInformationMessage(t('DeskRelay: provider "{0}" added ({1}).', id, describeProvider(config)), useNow);
      active = choice === useNow;
    }
    if (active) {
      await setActiveProviderId(id);
      this.log.info(`active provider: ${id}`);
    }
    if (config.kind === 'vscode-lm' && a.kind === undefined) {
      const allow = t('Allow Now');
      const choice = await vscode.window.showInformationMessage(
        t('VS Code asks once before DeskRelay may use its models. Allow it now, at the desk, so the phone never waits on a dialog nobody sees.'),
        allow,
      );
      if (choice === allow) await vscode.commands.executeCommand('deskrelay.allowVsCodeModels');
    }
    const transcription = config.kind === 'openai-compatible' ? await this.askTranscription(a, models) : undefined;
    if (transcription) {
      await setTranscriptionChoice({ provider: id, model: transcription });
      this.log.info(`transcription: ${id}, model ${transcription}`);
    }
    return { id, config, models, active, ...(transcription ? { transcription } : {}) };
  }

  /**
   * The step that makes an OpenAI-compatible provider the phone's transcriber: its
   * speech-to-text models first (whisper…, …transcribe), any other model name typed in.
   */
  private async askTranscription(a: AddProviderAnswers, models: readonly string[]): Promise<string | undefined> {
    if (a.transcriptionModel !== undefined) return a.transcriptionModel?.trim() || undefined;
    if (a.kind !== undefined) return undefined;
    const speech = models.filter((m) => /whisper|transcri|speech|stt/i.test(m));
    const none = { label: t('Not for voice messages'), model: undefined as string | undefined };
    const other = { label: t('Another model…'), model: '' as string | undefined };
    const pick = await vscode.window.showQuickPick([none, ...speech.map((m) => ({ label: m, model: m as string | undefined })), other], {
      title: t('DeskRelay: Add Provider — voice messages'),
      placeHolder: t("Use this provider to transcribe the phone's voice messages? (POST /v1/audio/transcriptions)"),
    });
    if (!pick || pick.model === undefined) return undefined;
    if (pick.model) return pick.model;
    const typed = await vscode.window.showInputBox({
      title: t('DeskRelay: Add Provider — transcription model'),
      prompt: t('The model that transcribes, e.g. whisper-1 or whisper-large-v3'),
      ignoreFocusOut: true,
    });
    return typed?.trim() || undefined;
  }

  /** Remove Provider: its settings entry and its stored key; the active one falls back to the first left. */
  async removeProvider(id?: string, confirmed?: boolean): Promise<boolean> {
    if (typeof id !== 'string') {
      id = await this.pickProvider(t('DeskRelay: Remove Provider'));
      if (!id) return false;
    }
    const cfg = vscode.workspace.getConfiguration(SECTION);
    const current = cfg.get<unknown[]>('providers', []);
    const list = Array.isArray(current) ? current : [];
    const rest = list.filter((p) => (p as { id?: unknown } | null)?.id !== id);
    if (rest.length === list.length) {
      void vscode.window.showErrorMessage(t('DeskRelay: no provider "{0}" in the deskrelay.providers setting.', id));
      return false;
    }
    if (confirmed !== true) {
      const remove = t('Remove');
      const choice = await vscode.window.showWarningMessage(t('Remove the provider "{0}" and its stored API key?', id), { modal: true }, remove);
      if (choice !== remove) return false;
    }
    await cfg.update('providers', rest, vscode.ConfigurationTarget.Global);
    if (await this.keys.has(id)) await this.keys.set(id, '');
    if (activeProviderId() === id) {
      const next = providerEntries().find((e) => e.config && e.config.kind !== 'cloud')?.id ?? '';
      await setActiveProviderId(next);
    }
    // The phone's transcriber went with it: the phone falls back to its browser's recogniser.
    if (transcriptionChoice()?.provider === id) await cfg.update('transcription', undefined, vscode.ConfigurationTarget.Global);
    this.log.info(`provider removed: ${id}`);
    return true;
  }

  /** Edit Provider Model: the models the provider lists (VS Code's for vscode-lm), `auto` where it applies. */
  async editModel(id?: string, model?: string): Promise<string | undefined> {
    if (typeof id !== 'string') {
      id = await this.pickProvider(t('DeskRelay: Edit Provider Model'));
      if (!id) return undefined;
    }
    const entry = providerEntries().find((e) => e.id === id);
    if (!entry?.config || entry.config.kind === 'cloud') {
      void vscode.window.showErrorMessage(t('DeskRelay: provider "{0}" has no models to choose from.', id));
      return undefined;
    }
    const config = entry.config;
    if (typeof model !== 'string') {
      let items: vscode.QuickPickItem[];
      try {
        items = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: t('DeskRelay: asking {0} for its models…', describeProvider(config)) }, async () => {
          if (config.kind === 'vscode-lm') return (await selectModels('auto')).map((m) => ({ label: modelSelector(m), description: modelTitle(m) }));
          return (await listModels(config, { keys: this.keys, idleTimeoutMs: 10_000 })).map((m) => ({ label: m }));
        });
      } catch (err) {
        void vscode.window.showErrorMessage(t('DeskRelay: {0}', message(err)));
        return undefined;
      }
      if (config.kind === 'ollama' || config.kind === 'openai-compatible' || config.kind === 'vscode-lm') items.unshift({ label: 'auto', description: t('the first model it lists') });
      const pick = await vscode.window.showQuickPick(items, { title: t('DeskRelay: model for "{0}"', id), placeHolder: t('Now: {0}', config.model ?? 'auto') });
      if (!pick) return undefined;
      model = pick.label;
    }
    const cfg = vscode.workspace.getConfiguration(SECTION);
    const list = (cfg.get<unknown[]>('providers', []) ?? []).map((p) =>
      (p as { id?: unknown } | null)?.id === id ? { ...(p as object), model } : p,
    );
    await cfg.update('providers', list, vscode.ConfigurationTarget.Global);
    this.log.info(`provider ${id}: model ${model}`);
    return model;
  }

  /** Allow Phone Chats with VS Code Models: the first request at the desk, for each vscode-lm provider's model. */
  async allowVsCodeModels(): Promise<{ allowed: string[]; refused: string[] }> {
    const providers = providerEntries()
      .map((e) => e.config)
      .filter((c): c is ProviderConfig => c?.kind === 'vscode-lm');
    const result = await allowVsCodeModels(this.context, providers);
    this.log.info(`VS Code models allowed: ${result.allowed.join(', ') || 'none'}${result.refused.length ? `; not allowed: ${result.refused.join(', ')}` : ''}`);
    if (!result.allowed.length && !result.refused.length) {
      void vscode.window.showWarningMessage(t("DeskRelay: VS Code offers no language models right now (is GitHub Copilot Chat or another model extension installed and signed in?)."));
    } else if (result.refused.length) {
      void vscode.window.showWarningMessage(t('DeskRelay: VS Code did not allow {0}. Run this command again to be asked again.', result.refused.join(', ')));
    } else {
      void vscode.window.showInformationMessage(t('DeskRelay: the phone may now chat with {0}.', result.allowed.join(', ')));
    }
    return result;
  }

  private async pickKind(): Promise<AddKind | undefined> {
    const items: (vscode.QuickPickItem & { value: AddKind })[] = [
      { value: 'local', label: `$(vm) ${t('Local runner on this computer')}`, detail: t('Ollama, LM Studio, llama.cpp, Jan or vLLM, found on their usual ports') },
      { value: 'vscode-lm', label: `$(copilot) ${t("VS Code's language models")}`, detail: t('The models VS Code offers, such as GitHub Copilot\'s; no key needed') },
      { value: 'openai', label: `$(key) OpenAI`, detail: t('Needs an API key') },
      { value: 'anthropic', label: `$(key) Anthropic`, detail: t('Needs an API key') },
      { value: 'gemini', label: `$(key) Gemini`, detail: t('Needs an API key') },
      { value: 'openai-compatible', label: `$(globe) ${t('Other OpenAI-compatible server')}`, detail: t('Any server with /v1/chat/completions, at a URL you enter') },
    ];
    return (await vscode.window.showQuickPick(items, { title: t('DeskRelay: Add Provider'), placeHolder: t('What kind of provider?') }))?.value;
  }

  private async findRunner(a: AddProviderAnswers): Promise<DetectedRunner | AddProviderResult | undefined> {
    let runners;
    try {
      runners = runnersToProbe();
    } catch (err) {
      return this.fail(message(err));
    }
    const found = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: t('DeskRelay: looking for local runners…') }, () => detectRunners({ runners }));
    const ports = runners.map((r) => `${r.title} ${r.port}`).join(', ');
    if (!found.length) {
      return this.fail(t('DeskRelay: no local runner answered on 127.0.0.1 ({0}). Start one, or add it as an "Other OpenAI-compatible server" with its URL.', ports));
    }
    if (a.runner !== undefined) {
      const chosen = found.find((f) => f.runner.name === a.runner);
      return chosen ?? this.fail(t('DeskRelay: {0} did not answer on 127.0.0.1. Found: {1}.', a.runner, found.map((f) => f.runner.title).join(', ')));
    }
    const pick = await vscode.window.showQuickPick(
      found.map((f) => ({
        label: f.runner.title,
        description: f.config.baseUrl,
        detail: f.models.length ? t('{0} models: {1}', f.models.length, f.models.slice(0, 6).join(', ')) : t('no models installed yet'),
        found: f,
      })),
      { title: t('DeskRelay: Add Provider — local runner'), placeHolder: t('Found on this computer') },
    );
    if (pick) a.runner = pick.found.runner.name;
    return pick?.found;
  }

  /** Asks for the key (unless given) and checks it with the model list; asks again after a refusal. */
  private async checkKey(config: ProviderConfig, needed: boolean, given: string | undefined): Promise<{ key?: string; models: string[] } | Omit<AddProviderResult, 'models'> | undefined> {
    for (;;) {
      let key = given;
      if (key === undefined) {
        key = await vscode.window.showInputBox({
          title: t('DeskRelay: API key for {0}', describeProvider(config)),
          prompt: needed ? t("Stored in VS Code's secret storage, never in settings. Checked with one request before it is saved.") : t('Leave empty if the server needs no key.'),
          password: true,
          ignoreFocusOut: true,
        });
        if (key === undefined) return undefined;
      }
      key = key.trim() || undefined;
      if (!key && needed) {
        if (given !== undefined) return this.fail(t('DeskRelay: {0} needs an API key.', describeProvider(config)));
        continue;
      }
      try {
        const models = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: t('DeskRelay: checking the key with {0}…', describeProvider(config)) }, () =>
          listModels(config, { keys: fixedKey(key), idleTimeoutMs: 15_000 }),
        );
        return { key, models };
      } catch (err) {
        if (given !== undefined) return this.fail(message(err));
        void vscode.window.showErrorMessage(t('DeskRelay: {0}', message(err)));
      }
    }
  }

  private async pickProvider(title: string): Promise<string | undefined> {
    const active = activeProviderId();
    const pick = await vscode.window.showQuickPick(
      providerEntries().map((e) => ({ label: e.id, description: [e.config?.kind, e.config?.model, e.id === active ? t('active') : undefined].filter(Boolean).join(' · ') })),
      { title, placeHolder: t('Which provider?') },
    );
    return pick?.label;
  }

  private suggestedId(kind: AddKind, runner?: string): string {
    if (kind === 'local') return runner ?? 'local';
    if (kind === 'vscode-lm') return 'vscode';
    if (kind === 'openai-compatible') return 'server';
    return HOSTED[kind].id;
  }

  private fail(text: string): AddProviderResult {
    this.log.warn(text);
    void vscode.window.showErrorMessage(text);
    return { error: text };
  }
}

const isRunner = (x: DetectedRunner | AddProviderResult | undefined): x is DetectedRunner => x !== undefined && 'runner' in x;
