import * as vscode from 'vscode';
import type { OutputLog } from '../log';
import type { SecretKeySource } from '../secrets';
import { activeProviderId, providerEntries, setActiveProviderId } from '../settings';

const t = vscode.l10n.t;

/** Which provider the phone's chat uses, and the providers' API keys. */
export class ProviderCommands {
  constructor(
    private readonly keys: SecretKeySource,
    private readonly log: OutputLog,
  ) {}

  /** Select Provider: `id` sets it directly; without it, a quick pick with the active one marked. */
  async selectProvider(id?: string): Promise<string | undefined> {
    const entries = providerEntries();
    if (typeof id !== 'string') {
      const active = activeProviderId();
      type Item = vscode.QuickPickItem & { id?: string };
      const items: Item[] = entries.map((e) => ({
        id: e.id,
        label: `${e.id === active ? '$(check) ' : ''}${e.id}`,
        description: e.config ? [e.config.kind, e.config.model].filter(Boolean).join(' · ') : `$(warning) ${t('invalid')}`,
        detail: e.config ? e.config.baseUrl : e.problem,
        picked: e.id === active,
      }));
      items.push({ label: `$(gear) ${t('Edit providers in settings…')}` });
      const pick = await vscode.window.showQuickPick(items, { title: t('DeskRelay: Select Provider'), placeHolder: t('Active: {0}', active || t('(none)')) });
      if (!pick) return undefined;
      if (!pick.id) {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'deskrelay.providers');
        return undefined;
      }
      id = pick.id;
    }
    const entry = entries.find((e) => e.id === id);
    if (!entry) {
      void vscode.window.showErrorMessage(t('DeskRelay: no provider "{0}" in the deskrelay.providers setting.', id));
      return undefined;
    }
    await setActiveProviderId(id);
    this.log.info(`active provider: ${id}`);
    if (entry.problem) void vscode.window.showWarningMessage(t('DeskRelay: provider "{0}" is selected but its settings are invalid: {1}', id, entry.problem));
    else if (entry.config?.kind === 'cloud') void vscode.window.showWarningMessage(t("DeskRelay: \"{0}\" is the cloud provider; the phone's chat is refused until you switch to a local provider.", id));
    return id;
  }

  /** Set Provider API Key: asks with a password box unless given (an empty key removes it). */
  async setApiKey(providerId?: string, key?: string): Promise<boolean> {
    if (typeof providerId !== 'string') {
      const items = providerEntries()
        .filter((e) => e.config?.kind !== 'cloud')
        .map((e) => ({ label: e.id, description: e.config ? e.config.kind : t('invalid'), id: e.id }));
      const pick = await vscode.window.showQuickPick(items, { title: t('DeskRelay: Set Provider API Key'), placeHolder: t('Which provider?') });
      if (!pick) return false;
      providerId = pick.id;
    }
    if (typeof key !== 'string') {
      const had = await this.keys.has(providerId);
      key = await vscode.window.showInputBox({
        title: t('DeskRelay: API key for "{0}"', providerId),
        prompt: had ? t("Stored in VS Code's secret storage, never in settings. Leave empty to remove the stored key.") : t("Stored in VS Code's secret storage, never in settings."),
        password: true,
        ignoreFocusOut: true,
      });
      if (key === undefined) return false;
    }
    await this.keys.set(providerId, key.trim());
    this.log.info(`API key for provider ${providerId} ${key.trim() ? 'stored' : 'removed'}`);
    void vscode.window.showInformationMessage(
      key.trim() ? t('DeskRelay: API key for "{0}" stored in VS Code\'s secret storage.', providerId) : t('DeskRelay: API key for "{0}" removed.', providerId),
    );
    return true;
  }
}
