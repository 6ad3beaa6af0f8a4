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
import { MAX_TOOL_ARGUMENT_CHARS, ProviderError, type AdapterFactory, type ChatAdapter, type ChatMessage, type ProviderConfig, type ToolOptions } from '../../server/src';

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

/**
 * The chat as VS Code's API takes it: user and assistant turns; system text goes first into the
 * first user turn. Tool history as the API documents it (LanguageModelChatRequestOptions.tools):
 * an Assistant message with LanguageModelToolCallPart, then a User message with
 * LanguageModelToolResultPart (consecutive results in one User message).
 */
function toVsCode(messages: ChatMessage[]): vscode.LanguageModelChatMessage[] {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
  const out: vscode.LanguageModelChatMessage[] = [];
  let systemPending = system !== '';
  let results: vscode.LanguageModelToolResultPart[] | undefined;
  for (const m of messages) {
    if (m.role === 'system') continue;
    if (m.images?.length) throw new ProviderError(`${LABEL} take text only through DeskRelay; send the message without the photo, or switch to a provider that reads images.`);
    if (m.role === 'tool') {
      const part = new vscode.LanguageModelToolResultPart(m.toolCallId ?? '', [new vscode.LanguageModelTextPart(m.content)]);
      if (results) results.push(part);
      else {
        results = [part];
        out.push(vscode.LanguageModelChatMessage.User(results));
      }
      continue;
    }
    results = undefined;
    if (m.role === 'user') {
      out.push(vscode.LanguageModelChatMessage.User(systemPending ? `${system}\n\n${m.content}` : m.content));
      systemPending = false;
    } else if (m.toolCalls?.length) {
      const parts: (vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart)[] = m.content === '' ? [] : [new vscode.LanguageModelTextPart(m.content)];
      for (const c of m.toolCalls) parts.push(new vscode.LanguageModelToolCallPart(c.id, c.name, c.arguments));
      out.push(vscode.LanguageModelChatMessage.Assistant(parts));
    } else out.push(vscode.LanguageModelChatMessage.Assistant(m.content));
  }
  if (systemPending) out.unshift(vscode.LanguageModelChatMessage.User(system));
  return out;
}

/**
 * The request options with tools: LanguageModelChatTool {name, description, inputSchema} and the
 * tool mode. VS Code has no "none" mode (no tools are offered then) and no named mode (only that
 * tool is offered, with Required).
 */
function requestOptions(options: ToolOptions | undefined): vscode.LanguageModelChatRequestOptions {
  const base: vscode.LanguageModelChatRequestOptions = { justification: JUSTIFICATION };
  const choice = options?.toolChoice;
  if (!options?.tools?.length || choice === 'none') return base;
  const named = typeof choice === 'object' ? choice.name : undefined;
  const tools = options.tools
    .filter((t) => named === undefined || t.name === named)
    .map((t): vscode.LanguageModelChatTool => ({ name: t.name, description: t.description ?? '', inputSchema: t.parameters }));
  const required = named !== undefined || choice === 'required';
  return { ...base, tools, toolMode: required ? vscode.LanguageModelChatToolMode.Required : vscode.LanguageModelChatToolMode.Auto };
}

/** A call's input as VS Code hands it: an object, else the model's fault. */
function callInput(part: vscode.LanguageModelToolCallPart, m: vscode.LanguageModelChat): Record<string, unknown> {
  const input: unknown = part.input;
  if (input === undefined || input === null) return {};
  if (typeof input !== 'object' || Array.isArray(input)) throw new ProviderError(`${LABEL}: ${modelTitle(m)} called tool "${part.name}" with arguments that are not a JSON object`);
  if (JSON.stringify(input).length > MAX_TOOL_ARGUMENT_CHARS) {
    throw new ProviderError(`${LABEL}: ${modelTitle(m)} sent arguments over ${MAX_TOOL_ARGUMENT_CHARS / (1024 * 1024)} MiB for one call of tool "${part.name}"; the desktop stopped the reply there`);
  }
  return input as Record<string, unknown>;
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
      async run(messages, signal, sink, options) {
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
            response = await model.sendRequest(chat, requestOptions(options), cancel.token);
          } catch (err) {
            if (signal.aborted) throw abortError();
            throw vsCodeFailure(err, model);
          }
          try {
            for await (const part of response.stream) {
              if (signal.aborted) break;
              if (part instanceof vscode.LanguageModelTextPart) {
                if (part.value === '') continue;
                sink.piece('text', part.value);
                await sink.flush();
              } else if (part instanceof vscode.LanguageModelToolCallPart) {
                sink.toolCall?.({ id: part.callId, name: part.name, arguments: callInput(part, model) });
                await sink.flush();
              }
            }
          } catch (err) {
            if (signal.aborted) throw abortError();
            if (err instanceof ProviderError) throw err;
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
