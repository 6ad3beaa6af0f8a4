import { checkImage, linkToolResults, MAX_IMAGES, parseChatRequest, parseToolCall, parseTools } from '../../chat/request';
import { imageTypeOf, NOT_AN_IMAGE } from '../../chat/imageType';
import { HttpError } from '../../http/errors';
import type { ChatImage, ChatMessage, ToolOptions } from '../../providers/types';

/** What the door uses of an Ollama request; `messages` empty means "just load the model". */
export interface OllamaRequest {
  messages: ChatMessage[];
  stream: boolean;
  /** `/api/chat`'s tools; undefined when it offers none. */
  tools?: ToolOptions;
  /** `keep_alive` 0 with nothing to generate: Ollama unloads the model instead of loading it. */
  unload: boolean;
}

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const ROLES: Record<string, ChatMessage['role']> = { system: 'system', user: 'user', assistant: 'assistant', tool: 'tool' };

/**
 * An Ollama `/api/chat` request mapped onto DeskRelay's chat request. Roles are read
 * case-insensitively and a missing content counts as empty, as Ollama reads them; a user turn's
 * `images` (bare base64, as Ollama takes them) become its photos; `tools` are offered to the
 * model, an assistant turn's `tool_calls` (arguments an object) and `tool` turns (with
 * `tool_name`, and `tool_call_id` when the client kept it) are its tool history (ollama/ollama
 * api/types.go Message). An assistant turn's `thinking`, `model`, `options`, `think`, `format`
 * and `keep_alive` are accepted and not used (the desktop's provider and settings answer). The
 * result goes through the SPEC request's own checks (at most 1000 messages).
 */
export function parseOllamaChat(body: unknown): OllamaRequest {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "messages" array.');
  const { messages } = body;
  const common = commonFields(body);
  const tools = parseTools(body.tools);
  const withTools = tools === undefined || tools.length === 0 ? {} : { tools: { tools } };
  if (messages === undefined || messages === null) return { messages: [], ...common };
  if (!Array.isArray(messages)) throw invalid('messages must be an array of {role, content} objects.');
  if (messages.length === 0) return { messages: [], ...common };
  const count: Count = { n: 0 };
  // What the SPEC request has no field for, put back onto its messages once they are checked.
  const extras: Partial<ChatMessage>[] = [];
  const mapped = messages.map((message, i) => {
    if (!isObject(message)) throw invalid(`messages[${i}] must be an object with role and content.`);
    const role = typeof message.role === 'string' ? ROLES[message.role.toLowerCase()] : undefined;
    if (role === undefined) throw invalid(`messages[${i}].role must be one of system, user, assistant, tool.`);
    const content = message.content ?? '';
    if (typeof content !== 'string') throw invalid(`messages[${i}].content must be a string.`);
    if (role === 'tool') {
      const name = optionalString(message.tool_name, `messages[${i}].tool_name`);
      const id = optionalString(message.tool_call_id, `messages[${i}].tool_call_id`);
      extras[i] = { role: 'tool', ...(name === undefined ? {} : { name }), ...(id === undefined ? {} : { toolCallId: id }) };
      // Checked as the user's text would be; it becomes a tool turn again below.
      return { role: 'user', content };
    }
    if (role === 'assistant' && message.tool_calls !== undefined && message.tool_calls !== null) {
      if (!Array.isArray(message.tool_calls)) throw invalid(`messages[${i}].tool_calls must be an array.`);
      const toolCalls = message.tool_calls.map((c, j) => parseToolCall(c, `messages[${i}].tool_calls[${j}]`, `call_${i}_${j}`));
      if (toolCalls.length > 0) extras[i] = { toolCalls };
    }
    const images = photos(message.images, `messages[${i}].images`, role, count);
    return images.length === 0 ? { role, content } : { role, content: [{ type: 'text', text: content }, ...images.map(asPart)] };
  });
  const parsed = parseChatRequest({ messages: mapped });
  extras.forEach((extra, i) => Object.assign(parsed[i]!, extra));
  return { messages: linkToolResults(parsed), ...common, ...withTools };
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw invalid(`${field} must be a string.`);
  return value;
}

/** Photos counted across one request, for the limit of MAX_IMAGES. */
interface Count {
  n: number;
}

const asPart = (image: ChatImage) => ({ type: 'image', mediaType: image.mediaType, data: image.data });

/**
 * Ollama's `images`: bare base64 with no media type, so the type is read from the image's first
 * bytes. Only a user turn may carry photos (as on every door). Limits as for any chat request.
 */
function photos(value: unknown, field: string, role: ChatMessage['role'], count: Count): ChatImage[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalid(`${field} must be an array of base64 images.`);
  if (value.length > 0 && role !== 'user') throw invalid(`${field}: only user messages may carry images.`);
  return value.map((data, j) => {
    const where = `${field}[${j}]`;
    if (++count.n > MAX_IMAGES) throw new HttpError(413, 'request.body_too_large', `A request may carry at most ${MAX_IMAGES} images; ${where} is one too many.`);
    if (typeof data !== 'string' || data === '') throw invalid(`${where} must be the image as a base64 string.`);
    const mediaType = imageTypeOf(data);
    if (!mediaType) throw invalid(`${where} ${NOT_AN_IMAGE}.`);
    return checkImage(mediaType, data, where, where);
  });
}

/**
 * An Ollama `/api/generate` request: `system` (optional) and `prompt` become a system and a user
 * turn, the prompt's `images` its photos. No prompt means "just load the model". `suffix`, `template`, `context`, `raw`
 * and the fields `/api/chat` ignores are accepted and not used.
 */
export function parseOllamaGenerate(body: unknown): OllamaRequest {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "prompt" string.');
  const { prompt, system, images } = body;
  const common = commonFields(body);
  if (prompt !== undefined && prompt !== null && typeof prompt !== 'string') throw invalid('prompt must be a string.');
  if (system !== undefined && system !== null && typeof system !== 'string') throw invalid('system must be a string.');
  if (!prompt) return { messages: [], ...common };
  const messages: ChatMessage[] = [];
  if (system) messages.push({ role: 'system', content: system });
  const photosOfPrompt = photos(images, 'images', 'user', { n: 0 });
  messages.push(photosOfPrompt.length === 0 ? { role: 'user', content: prompt } : { role: 'user', content: prompt, images: photosOfPrompt });
  return { messages, ...common };
}

/** `stream` (true unless it is false) and whether `keep_alive` asks to unload (0, "0", "0s"…). */
function commonFields(body: Record<string, unknown>): Omit<OllamaRequest, 'messages'> {
  const { stream, keep_alive: keepAlive } = body;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw invalid('stream must be a boolean.');
  const unload = keepAlive === 0 || (typeof keepAlive === 'string' && /^0+(\.0*)?[a-z]*$/i.test(keepAlive.trim()));
  return { stream: stream !== false, unload };
}
