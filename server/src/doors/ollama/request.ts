import { parseChatRequest } from '../../chat/request';
import { HttpError } from '../../http/errors';
import type { ChatMessage } from '../../providers/types';

/** What the door uses of an Ollama request; `messages` empty means "just load the model". */
export interface OllamaRequest {
  messages: ChatMessage[];
  stream: boolean;
  /** `keep_alive` 0 with nothing to generate: Ollama unloads the model instead of loading it. */
  unload: boolean;
}

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const ROLES: Record<string, ChatMessage['role']> = { system: 'system', user: 'user', assistant: 'assistant' };

/**
 * An Ollama `/api/chat` request mapped onto DeskRelay's chat request. Roles are read
 * case-insensitively and a missing content counts as empty, as Ollama reads them; `images`,
 * an assistant turn's `thinking`, `model`, `options`, `think`, `format`, `tools` and
 * `keep_alive` are accepted and not used (the desktop's provider and settings answer). Tool
 * turns are refused: the relay carries plain chat. The result goes through the SPEC request's
 * own checks (at most 1000 messages).
 */
export function parseOllamaChat(body: unknown): OllamaRequest {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "messages" array.');
  const { messages } = body;
  const common = commonFields(body);
  if (messages === undefined || messages === null) return { messages: [], ...common };
  if (!Array.isArray(messages)) throw invalid('messages must be an array of {role, content} objects.');
  if (messages.length === 0) return { messages: [], ...common };
  const mapped = messages.map((message, i) => {
    if (!isObject(message)) throw invalid(`messages[${i}] must be an object with role and content.`);
    const role = typeof message.role === 'string' ? ROLES[message.role.toLowerCase()] : undefined;
    if (role === undefined) {
      throw invalid(
        message.role === 'tool'
          ? `messages[${i}].role "tool" is not supported: DeskRelay relays plain chat, without tool calls.`
          : `messages[${i}].role must be one of system, user, assistant.`,
      );
    }
    const content = message.content ?? '';
    if (typeof content !== 'string') throw invalid(`messages[${i}].content must be a string.`);
    return { role, content };
  });
  return { messages: parseChatRequest({ messages: mapped }), ...common };
}

/**
 * An Ollama `/api/generate` request: `system` (optional) and `prompt` become a system and a user
 * turn. No prompt means "just load the model". `images`, `suffix`, `template`, `context`, `raw`
 * and the fields `/api/chat` ignores are accepted and not used.
 */
export function parseOllamaGenerate(body: unknown): OllamaRequest {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "prompt" string.');
  const { prompt, system } = body;
  const common = commonFields(body);
  if (prompt !== undefined && prompt !== null && typeof prompt !== 'string') throw invalid('prompt must be a string.');
  if (system !== undefined && system !== null && typeof system !== 'string') throw invalid('system must be a string.');
  if (!prompt) return { messages: [], ...common };
  const messages: ChatMessage[] = [];
  if (system) messages.push({ role: 'system', content: system });
  messages.push({ role: 'user', content: prompt });
  return { messages, ...common };
}

/** `stream` (true unless it is false) and whether `keep_alive` asks to unload (0, "0", "0s"…). */
function commonFields(body: Record<string, unknown>): Omit<OllamaRequest, 'messages'> {
  const { stream, keep_alive: keepAlive } = body;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw invalid('stream must be a boolean.');
  const unload = keepAlive === 0 || (typeof keepAlive === 'string' && /^0+(\.0*)?[a-z]*$/i.test(keepAlive.trim()));
  return { stream: stream !== false, unload };
}
