import { ChatError } from './errors';
import { imageTypeOf, NOT_AN_IMAGE } from './imageType';
import { IMAGE_MEDIA_TYPES, type ChatImage, type ChatMessage, type Role, type ToolCall, type ToolChoice, type ToolSpec } from '../providers/types';

export const MAX_MESSAGES = 1000;
/** Photos in one request at most (issue 13). */
export const MAX_IMAGES = 8;
/** One photo at most this many bytes once decoded. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** Tools one request may offer at most (issue 22). */
export const MAX_TOOLS = 128;
/** One tool definition at most this large, as JSON (UTF-16 code units). */
export const MAX_TOOL_DEFINITION_CHARS = 64 * 1024;
const ROLES: readonly Role[] = ['system', 'user', 'assistant'];

const invalid = (message: string) => new ChatError('request.invalid_body', message);
/** Past a photo limit: the same answer as a body too large (the body was read whole, so the connection stays). */
const tooLarge = (message: string) => new ChatError('request.body_too_large', message);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Standard base64 with its padding; decoded bytes counted without decoding. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Checks one photo: a media type of IMAGE_MEDIA_TYPES and non-empty standard base64 of at most
 * MAX_IMAGE_BYTES decoded, whose bytes are an image of one of those types. The type the bytes
 * show is the one kept (a phone may label a PNG as a JPEG). `field` and `dataField` name where
 * they came from in messages.
 */
export function checkImage(mediaType: unknown, data: unknown, field: string, dataField: string): ChatImage {
  if (typeof mediaType !== 'string' || !(IMAGE_MEDIA_TYPES as readonly string[]).includes(mediaType)) {
    throw invalid(`${field} must be one of ${IMAGE_MEDIA_TYPES.join(', ')}.`);
  }
  if (typeof data !== 'string' || data === '') throw invalid(`${dataField} must be the image as a base64 string.`);
  if (data.length % 4 !== 0 || !BASE64.test(data)) throw invalid(`${dataField} is not valid base64 (standard alphabet, with its = padding).`);
  const decoded = (data.length / 4) * 3 - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
  if (decoded > MAX_IMAGE_BYTES) {
    throw tooLarge(`${dataField} is ${(decoded / 1024 / 1024).toFixed(1)} MiB; an image may be at most ${MAX_IMAGE_BYTES / 1024 / 1024} MiB. Downscale it first.`);
  }
  const actual = imageTypeOf(data);
  if (!actual) throw invalid(`${dataField} ${NOT_AN_IMAGE}.`);
  return { mediaType: actual, data };
}

/**
 * Validates a chat request (CONTRACT §5; issue 13 for content as parts) and returns only what
 * DeskRelay uses: unknown fields, including any provider settings a caller sends, are dropped
 * here. `content` is a string, or an array of `{"type":"text","text"}` and
 * `{"type":"image","mediaType","data"}` parts: text parts are joined, images kept in order.
 */
export function parseChatRequest(body: unknown): ChatMessage[] {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "messages" array.');
  const { messages } = body;
  if (messages === undefined) throw invalid('messages is required: an array of {role, content} objects.');
  if (!Array.isArray(messages)) throw invalid('messages must be an array of {role, content} objects.');
  if (messages.length === 0) throw invalid('messages must hold at least one message.');
  if (messages.length > MAX_MESSAGES) throw invalid(`messages must hold at most ${MAX_MESSAGES} messages.`);
  let imageCount = 0;
  return messages.map((message, i) => {
    if (!isObject(message)) throw invalid(`messages[${i}] must be an object with role and content.`);
    const { role, content } = message;
    if (typeof role !== 'string' || !ROLES.includes(role as Role)) {
      throw invalid(`messages[${i}].role must be one of ${ROLES.join(', ')}.`);
    }
    if (typeof content === 'string') return { role: role as Role, content };
    if (!Array.isArray(content)) throw invalid(`messages[${i}].content must be a string or an array of text and image parts.`);
    let text = '';
    const images: ChatImage[] = [];
    content.forEach((part, j) => {
      const where = `messages[${i}].content[${j}]`;
      if (!isObject(part)) throw invalid(`messages[${i}].content must be a string or an array of text and image parts; ${where} is not a part object.`);
      if (part.type === 'text') {
        if (typeof part.text !== 'string') throw invalid(`${where}.text must be a string.`);
        text += part.text;
      } else if (part.type === 'image') {
        // Providers take photos from the user only (OpenAI and Anthropic refuse them elsewhere).
        if (role !== 'user') throw invalid(`${where} is an image in a ${role} message; only user messages may carry images.`);
        if (++imageCount > MAX_IMAGES) throw tooLarge(`A request may carry at most ${MAX_IMAGES} images; ${where} is one too many.`);
        images.push(checkImage(part.mediaType, part.data, `${where}.mediaType`, `${where}.data`));
      } else {
        throw invalid(`${where}.type must be "text" or "image".`);
      }
    });
    return images.length === 0 ? { role: role as Role, content: text } : { role: role as Role, content: text, images };
  });
}

/** True when a message of the request carries a photo (such a request may be up to MAX_IMAGE_BODY_BYTES). */
export function carriesImages(messages: readonly ChatMessage[]): boolean {
  return messages.some((m) => m.images !== undefined && m.images.length > 0);
}

// Tools (issue 22): the OpenAI function form, which the Ollama API shares, and the results that answer the calls.

/** A tool without a schema takes no arguments; Anthropic requires a schema, so one is always sent. */
const NO_PARAMETERS = { type: 'object', properties: {} };

/**
 * `tools` in OpenAI's function form, which the Ollama API shares:
 * `[{"type":"function","function":{"name","description","parameters"}}]`. Names must be unique;
 * at most MAX_TOOLS tools, each at most MAX_TOOL_DEFINITION_CHARS as JSON. Undefined when absent.
 */
export function parseTools(value: unknown, field = 'tools'): ToolSpec[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalid(`${field} must be an array of {"type":"function","function":{name, description, parameters}} objects.`);
  if (value.length > MAX_TOOLS) throw invalid(`${field} holds ${value.length} tools; a request may offer at most ${MAX_TOOLS}.`);
  const names = new Set<string>();
  return value.map((tool, i) => {
    const where = `${field}[${i}]`;
    if (!isObject(tool) || (tool.type !== undefined && tool.type !== 'function') || !isObject(tool.function)) {
      throw invalid(`${where} must be {"type":"function","function":{name, description, parameters}}; only function tools are supported.`);
    }
    const size = JSON.stringify(tool).length;
    if (size > MAX_TOOL_DEFINITION_CHARS) throw tooLarge(`${where} is ${Math.ceil(size / 1024)} KiB; a tool definition may be at most ${MAX_TOOL_DEFINITION_CHARS / 1024} KiB.`);
    const { name, description, parameters } = tool.function;
    if (typeof name !== 'string' || name === '' || name.length > 128) throw invalid(`${where}.function.name must be a non-empty string of at most 128 characters.`);
    if (names.has(name)) throw invalid(`${where}.function.name "${name}" is offered twice; tool names must be unique.`);
    names.add(name);
    if (description !== undefined && description !== null && typeof description !== 'string') throw invalid(`${where}.function.description must be a string.`);
    if (parameters !== undefined && parameters !== null && !isObject(parameters)) throw invalid(`${where}.function.parameters must be a JSON Schema object.`);
    const spec: ToolSpec = { name, parameters: isObject(parameters) ? parameters : NO_PARAMETERS };
    if (typeof description === 'string') spec.description = description;
    return spec;
  });
}

/**
 * OpenAI's `tool_choice`: "auto", "none", "required", or `{"type":"function","function":{"name"}}`
 * naming one of the tools offered. Undefined when absent.
 */
export function parseToolChoice(value: unknown, tools: ToolSpec[] | undefined): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') {
    if (value === 'required' && !tools?.length) throw invalid('tool_choice "required" needs tools to choose from.');
    return value;
  }
  const name = isObject(value) && value.type === 'function' && isObject(value.function) ? value.function.name : undefined;
  if (typeof name !== 'string') throw invalid('tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name":"…"}}.');
  if (!tools?.some((t) => t.name === name)) throw invalid(`tool_choice names the tool "${name}", which is not among the tools offered.`);
  return { name };
}

/** A call's arguments as an object: OpenAI clients send a JSON string, Ollama clients an object. */
export function callArguments(value: unknown, field: string): Record<string, unknown> {
  if (value === undefined || value === null || value === '') return {};
  if (isObject(value)) return value;
  if (typeof value === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw invalid(`${field} must be a JSON object (as a string); it is not valid JSON.`);
    }
    if (isObject(parsed)) return parsed;
  }
  throw invalid(`${field} must be a JSON object.`);
}

/** One assistant tool call of a request, in OpenAI's form or Ollama's (whose id may be missing). */
export function parseToolCall(value: unknown, field: string, madeUpId: string): ToolCall {
  if (!isObject(value) || !isObject(value.function)) throw invalid(`${field} must be {"id","type":"function","function":{"name","arguments"}}.`);
  const { name, arguments: args } = value.function;
  if (typeof name !== 'string' || name === '') throw invalid(`${field}.function.name must be a non-empty string.`);
  if (value.id !== undefined && value.id !== null && typeof value.id !== 'string') throw invalid(`${field}.id must be a string.`);
  const id = typeof value.id === 'string' && value.id !== '' ? value.id : madeUpId;
  return { id, name, arguments: callArguments(args, `${field}.function.arguments`) };
}

/**
 * Gives every tool result the call it answers and that call's tool name, from the assistant turn
 * before it: OpenAI clients name only the call id, Ollama clients often only the tool. A result
 * without an id takes the first unanswered call of its tool (or the first unanswered call).
 */
export function linkToolResults(messages: ChatMessage[]): ChatMessage[] {
  let calls: ToolCall[] = [];
  const answered = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant' && m.toolCalls?.length) {
      calls = m.toolCalls;
      answered.clear();
      continue;
    }
    if (m.role !== 'tool') continue;
    if (m.toolCallId === undefined) {
      const call = calls.find((c) => !answered.has(c.id) && (m.name === undefined || c.name === m.name)) ?? calls.find((c) => !answered.has(c.id));
      if (call) m.toolCallId = call.id;
    }
    if (m.toolCallId !== undefined) answered.add(m.toolCallId);
    if (m.name === undefined) {
      const name = calls.find((c) => c.id === m.toolCallId)?.name;
      if (name !== undefined) m.name = name;
    }
  }
  return messages;
}
