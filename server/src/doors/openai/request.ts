import { checkImage, parseChatRequest } from '../../chat/request';
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
 * an array of text parts (concatenated) and `image_url` parts with `data:` URLs (a remote URL is
 * refused: the desktop fetches nothing a phone names), `developer` as `system`. `model` and sampling settings
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

/** OpenAI's content as DeskRelay's: a string, or text and image parts (checked again by parseChatRequest). */
function flattenContent(content: unknown, i: number, role: ChatMessage['role']): unknown {
  // An assistant turn that only called tools has null content.
  if (content === null && role === 'assistant') return '';
  if (!Array.isArray(content)) return content;
  return content.map((part, j) => {
    const where = `messages[${i}].content[${j}]`;
    if (isObject(part) && part.type === 'text' && typeof part.text === 'string') return { type: 'text', text: part.text };
    if (isObject(part) && part.type === 'image_url') {
      const image = isObject(part.image_url) ? part.image_url : undefined;
      const { mediaType, data } = dataUrl(image?.url, `${where}.image_url.url`);
      return { type: 'image', ...checkImage(mediaType, data, `${where}.image_url.url's media type`, `${where}.image_url.url's data`) };
    }
    const type = isObject(part) && typeof part.type === 'string' ? ` "${part.type}"` : '';
    throw invalid(`${where}${type} is not supported: send text parts ({"type":"text","text":"…"}) and image_url parts with data: URLs.`);
  });
}

/** `data:<media type>;base64,<data>`; any other URL (http, https, file…) is refused, never fetched. */
function dataUrl(url: unknown, field: string): { mediaType: string; data: string } {
  if (typeof url !== 'string') throw invalid(`${field} must be a data: URL (data:image/jpeg;base64,…).`);
  if (!/^data:/i.test(url)) {
    throw invalid(`${field} must be a data: URL (data:image/jpeg;base64,…): the desktop does not fetch images from the network.`);
  }
  const match = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/is.exec(url);
  if (!match || !match[2].split(';').some((p) => p.toLowerCase() === 'base64')) {
    throw invalid(`${field} must be a base64 data: URL (data:image/jpeg;base64,…).`);
  }
  return { mediaType: match[1].toLowerCase(), data: match[3] };
}
