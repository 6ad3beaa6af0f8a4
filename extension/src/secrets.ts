import * as vscode from 'vscode';
import type { KeySource, ProviderConfig } from '../../server/src';
import type { TunnelKind } from '../../server/src';

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

/**
 * Tunnel secrets in SecretStorage, one per kind that takes one: the named Cloudflare tunnel's token,
 * an ngrok authtoken (optional: ngrok's own config otherwise). Handed to the agent in its
 * environment only; never in settings, argv or logs.
 */
export class TunnelSecrets {
  constructor(private readonly storage: vscode.SecretStorage) {}

  private static key(kind: TunnelKind): string {
    return `deskrelay.tunnelToken.${kind}`;
  }

  async get(kind: TunnelKind): Promise<string | undefined> {
    return (await this.storage.get(TunnelSecrets.key(kind))) || undefined;
  }

  async set(kind: TunnelKind, token: string): Promise<void> {
    if (token) await this.storage.store(TunnelSecrets.key(kind), token);
    else await this.storage.delete(TunnelSecrets.key(kind));
  }
}
