/**
 * Provider kind `vscode-lm`: the models VS Code itself offers through its Language Model API
 * (`vscode.lm`, e.g. GitHub Copilot's), as an adapter the extension contributes to the relay
 * (RelayOptions.adapters); the server never imports `vscode`.
 *
 * Consent: VS Code asks the user the first time an extension sends a request to another
 * extension's model, and only in answer to a user action. A phone's message is no such action and
 * nobody may be at the desk to answer, so the adapter never triggers that dialog: without consent
 * it ends the reply at once with a message saying which command to run on the desktop, and the
 * command "DeskRelay: Allow Phone Chats with VS Code Models" makes the first request at the desk.
 */
import * as vscode from 'vscode';
import { ProviderError, type AdapterFactory, type ChatAdapter, type ChatMessage, type ProviderConfig } from '../../server/src';

export const ALLOW_COMMAND_TITLE = 'DeskRelay: Allow Phone Chats with VS Code Models';
const JUSTIFICATION = 'DeskRelay relays chats from your phone to this model.';
const LABEL = "VS Code's language models";

/**
 * The models a provider's `model` names, as `vscode.lm.selectChatModels` takes them: `auto` (or
 * none) = every model, `vendor/family` (e.g. `copilot/gpt-4o`), otherwise an id, then a family,
 * then a vendor.
 */
export async function selectModels(model: string | undefined): Promise<vscode.LanguageModelChat[]> {
  if (model === undefined || model === 'auto' || model.trim() === '') return vscode.lm.selectChatModels();
  const slash = model.indexOf('/');
  if (slash > 0) return vscode.lm.selectChatModels({ vendor: model.slice(0, slash), family: model.slice(slash + 1) });
  for (const selector of [{ id: model }, { family: model }, { vendor: model }]) {
    const found = await vscode.lm.selectChatModels(selector);
    if (found.length) return found;
  }
  return [];
}

/** How a model is named in messages and pickers: `GPT-4o (copilot/gpt-4o)`. */
export const modelTitle = (m: vscode.LanguageModelChat) => `${m.name || m.id} (${m.vendor}/${m.family})`;

/** The `model` value that selects exactly this model. */
export const modelSelector = (m: vscode.LanguageModelChat) => m.id;

export function consentMessage(m: vscode.LanguageModelChat): string {
  return `VS Code has not allowed DeskRelay to use its model ${modelTitle(m)} yet. On the desktop, run "${ALLOW_COMMAND_TITLE}" from the Command Palette and allow it; then send the message again.`;
}

/** The chat as VS Code's API takes it: user and assistant turns; system text goes first into the first user turn. */
function toVsCode(messages: ChatMessage[]): vscode.LanguageModelChatMessage[] {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
  const out: vscode.LanguageModelChatMessage[] = [];
  let systemPending = system !== '';
  for (const m of messages) {
    if (m.role === 'system') continue;
    if (m.images?.length) throw new ProviderError(`${LABEL} take text only through DeskRelay; send the message without the photo, or switch to a provider that reads images.`);
    if (m.role === 'user' || m.role === 'tool') {
      out.push(vscode.LanguageModelChatMessage.User(systemPending ? `${system}\n\n${m.content}` : m.content));
      systemPending = false;
    } else out.push(vscode.LanguageModelChatMessage.Assistant(m.content));
  }
  if (systemPending) out.unshift(vscode.LanguageModelChatMessage.User(system));
  return out;
}

/** VS Code's own message for a failed request: a gone model, no permission, a quota, a refusal. */
function vsCodeFailure(err: unknown, m: vscode.LanguageModelChat): ProviderError {
  const said = err instanceof Error ? err.message : String(err);
  if (err instanceof vscode.LanguageModelError && err.code === vscode.LanguageModelError.NoPermissions.name) {
    return new ProviderError(`${said} ${consentMessage(m)}`);
  }
  return new ProviderError(`${LABEL}: ${modelTitle(m)} failed: ${said || 'no details given'}`);
}

const abortError = () => new DOMException('The chat request was aborted', 'AbortError');

export function vscodeLmAdapters(context: vscode.ExtensionContext): { 'vscode-lm': AdapterFactory } {
  return {
    'vscode-lm': (config: ProviderConfig): ChatAdapter => ({
      label: LABEL,
      async run(messages, signal, sink) {
        const [model] = await selectModels(config.model);
        if (!model) {
          const all = (await vscode.lm.selectChatModels()).map(modelTitle);
          throw new ProviderError(
            `no model of ${LABEL} matches "${config.model ?? 'auto'}" (provider "${config.id}")${all.length ? `; available: ${all.join(', ')}` : '; VS Code offers none right now (is GitHub Copilot or another model extension installed and signed in?)'}. Pick one with "DeskRelay: Edit Provider Model".`,
          );
        }
        // Never the consent dialog from a phone's message: only `true` means allowed (undefined: not yet asked).
        if (context.languageModelAccessInformation.canSendRequest(model) !== true) throw new ProviderError(consentMessage(model));
        sink.model?.(modelSelector(model));
        const chat = toVsCode(messages);
        if (signal.aborted) throw abortError();
        const cancel = new vscode.CancellationTokenSource();
        const onAbort = () => cancel.cancel();
        signal.addEventListener('abort', onAbort, { once: true });
        try {
          let response: vscode.LanguageModelChatResponse;
          try {
            response = await model.sendRequest(chat, { justification: JUSTIFICATION }, cancel.token);
          } catch (err) {
            if (signal.aborted) throw abortError();
            throw vsCodeFailure(err, model);
          }
          try {
            for await (const part of response.stream) {
              if (signal.aborted) break;
              if (part instanceof vscode.LanguageModelTextPart && part.value !== '') {
                sink.piece('text', part.value);
                await sink.flush();
              }
            }
          } catch (err) {
            if (signal.aborted) throw abortError();
            throw vsCodeFailure(err, model);
          }
          if (signal.aborted) throw abortError();
          return 'stop';
        } finally {
          signal.removeEventListener('abort', onAbort);
          cancel.dispose();
        }
      },
    }),
  };
}

export interface AllowResult {
  /** Models VS Code now lets DeskRelay use. */
  allowed: string[];
  /** Models the user refused, or that failed. */
  refused: string[];
}

/**
 * "Allow Phone Chats with VS Code Models": one request at the desk to each model the `vscode-lm`
 * providers select (every model when none is configured), so that VS Code asks for consent now,
 * with someone there. The request is cancelled as soon as it is under way.
 */
export async function allowVsCodeModels(context: vscode.ExtensionContext, providers: ProviderConfig[]): Promise<AllowResult> {
  const selected = providers.length ? (await Promise.all(providers.map((p) => selectModels(p.model).then((ms) => ms.slice(0, 1))))).flat() : await vscode.lm.selectChatModels();
  const unique = [...new Map(selected.map((m) => [m.id, m])).values()];
  const result: AllowResult = { allowed: [], refused: [] };
  for (const m of unique) {
    if (context.languageModelAccessInformation.canSendRequest(m) === true) {
      result.allowed.push(m.id);
      continue;
    }
    const cancel = new vscode.CancellationTokenSource();
    try {
      await m.sendRequest([vscode.LanguageModelChatMessage.User('Reply with OK.')], { justification: JUSTIFICATION }, cancel.token);
      result.allowed.push(m.id);
    } catch {
      result.refused.push(m.id);
    } finally {
      cancel.cancel();
      cancel.dispose();
    }
  }
  return result;
}
