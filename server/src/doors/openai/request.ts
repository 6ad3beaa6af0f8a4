import { parseChatRequest } from '../../chat/request';
import { HttpError } from '../../http/errors';
import type { ChatMessage } from '../../providers/types';

export interface CompletionRequest {
  messages: ChatMessage[];
  stream: boolean;
}

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `developer` is OpenAI's newer name for `system`; tools cannot be relayed, so their turns are refused. */
const ROLE_MAP: Record<string, ChatMessage['role']> = { system: 'system', developer: 'system', user: 'user', assistant: 'assistant' };

/**
 * An OpenAI chat completion request mapped onto DeskRelay's chat request: content as a string or
 * an array of text parts (concatenated), `developer` as `system`. `model` and sampling settings
 * are ignored: the desktop chooses. The result goes through the SPEC request's own checks.
 */
export function parseCompletionRequest(body: unknown): CompletionRequest {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "messages" array.');
  const { messages, stream } = body;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw invalid('stream must be a boolean.');
  if (!Array.isArray(messages)) return { messages: parseChatRequest(body), stream: stream === true };
  const mapped = messages.map((message, i) => {
    if (!isObject(message)) return message;
    const role = typeof message.role === 'string' ? ROLE_MAP[message.role] : undefined;
    if (role === undefined) {
      throw invalid(
        message.role === 'tool' || message.role === 'function'
          ? `messages[${i}].role "${message.role}" is not supported: DeskRelay relays plain chat, without tool calls.`
          : `messages[${i}].role must be one of system, developer, user, assistant.`,
      );
    }
    return { role, content: flattenContent(message.content, i, role) };
  });
  return { messages: parseChatRequest({ messages: mapped }), stream: stream === true };
}

function flattenContent(content: unknown, i: number, role: ChatMessage['role']): unknown {
  // An assistant turn that only called tools has null content.
  if (content === null && role === 'assistant') return '';
  if (!Array.isArray(content)) return content;
  return content
    .map((part, j) => {
      if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string') {
        const type = isObject(part) && typeof part.type === 'string' ? ` "${part.type}"` : '';
        throw invalid(`messages[${i}].content[${j}]${type} is not supported: send text parts ({"type":"text","text":"…"}) only.`);
      }
      return part.text;
    })
    .join('');
}
