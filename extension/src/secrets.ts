import * as vscode from 'vscode';
import type { KeySource, ProviderConfig } from '../../server/src';

const secretName = (providerId: string) => `deskrelay.apiKey.${providerId}`;

/** Provider API keys in VS Code's SecretStorage, one per provider id; never in settings or logs. */
export class SecretKeySource implements KeySource {
  constructor(private readonly storage: vscode.SecretStorage) {}

  async get(provider: ProviderConfig): Promise<string | undefined> {
    return (await this.storage.get(secretName(provider.id))) || undefined;
  }

  howToSet(provider: ProviderConfig): string {
    return `set it in VS Code with the command "DeskRelay: Set Provider API Key" for provider "${provider.id}"`;
  }

  async has(providerId: string): Promise<boolean> {
    return !!(await this.storage.get(secretName(providerId)));
  }

  async set(providerId: string, key: string): Promise<void> {
    if (key) await this.storage.store(secretName(providerId), key);
    else await this.storage.delete(secretName(providerId));
  }
}
