import { HttpError } from '../http/errors';
import type { ChatMessage, Role } from '../providers/types';

export const MAX_MESSAGES = 1000;
const ROLES: readonly Role[] = ['system', 'user', 'assistant'];

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Validates a chat request (CONTRACT §5) and returns only what DeskRelay uses: unknown fields,
 * including any provider settings a caller sends, are dropped here.
 */
export function parseChatRequest(body: unknown): ChatMessage[] {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "messages" array.');
  const { messages } = body;
  if (messages === undefined) throw invalid('messages is required: an array of {role, content} objects.');
  if (!Array.isArray(messages)) throw invalid('messages must be an array of {role, content} objects.');
  if (messages.length === 0) throw invalid('messages must hold at least one message.');
  if (messages.length > MAX_MESSAGES) throw invalid(`messages must hold at most ${MAX_MESSAGES} messages.`);
  return messages.map((message, i) => {
    if (!isObject(message)) throw invalid(`messages[${i}] must be an object with role and content.`);
    const { role, content } = message;
    if (typeof role !== 'string' || !ROLES.includes(role as Role)) {
      throw invalid(`messages[${i}].role must be one of ${ROLES.join(', ')}.`);
    }
    if (typeof content !== 'string') throw invalid(`messages[${i}].content must be a string.`);
    return { role: role as Role, content };
  });
}
