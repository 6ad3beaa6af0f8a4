import { checkImage, linkToolResults, parseChatRequest, parseToolCall, parseToolChoice, parseTools } from '../../chat/request';
import { HttpError } from '../../http/errors';
import type { ChatMessage, ToolOptions } from '../../providers/types';

export interface CompletionRequest {
  messages: ChatMessage[];
  stream: boolean;
  /** The tools the client offers and its tool_choice; undefined when it offers none. */
  tools?: ToolOptions;
}

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `developer` is OpenAI's newer name for `system`; `tool` turns are read apart (they carry a call id). */
const ROLE_MAP: Record<string, Exclude<ChatMessage['role'], 'tool'>> = { system: 'system', developer: 'system', user: 'user', assistant: 'assistant' };

/**
 * An OpenAI chat completion request mapped onto DeskRelay's chat request: content as a string or
 * an array of text parts (concatenated) and `image_url` parts with `data:` URLs (a remote URL is
 * refused: the desktop fetches nothing a phone names), `developer` as `system`; `tools` and
 * `tool_choice`, assistant `tool_calls` (arguments a JSON string) and `role:"tool"` results with
 * their `tool_call_id`. `model` and sampling settings are ignored: the desktop chooses. The
 * result goes through the SPEC request's own checks.
 */
export function parseCompletionRequest(body: unknown): CompletionRequest {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "messages" array.');
  const { messages, stream } = body;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw invalid('stream must be a boolean.');
  const tools = parseTools(body.tools);
  const toolChoice = parseToolChoice(body.tool_choice, tools);
  const toolOptions: ToolOptions | undefined = tools === undefined || tools.length === 0 ? undefined : { tools, ...(toolChoice === undefined ? {} : { toolChoice }) };
  if (!Array.isArray(messages)) return { messages: parseChatRequest(body), stream: stream === true };
  // What the SPEC request has no field for, put back onto its messages once they are checked.
  const extras: Partial<ChatMessage>[] = [];
  const mapped = messages.map((message, i) => {
    if (!isObject(message)) return message;
    if (message.role === 'tool') {
      const id = message.tool_call_id;
      if (typeof id !== 'string' || id === '') throw invalid(`messages[${i}].tool_call_id must be the id of the tool call this result answers.`);
      extras[i] = { role: 'tool', toolCallId: id };
      // Checked as the user's text would be; it becomes a tool turn again below.
      return { role: 'user', content: toolResultText(message.content, i) };
    }
    const role = typeof message.role === 'string' ? ROLE_MAP[message.role] : undefined;
    if (role === undefined) {
      throw invalid(
        message.role === 'function'
          ? `messages[${i}].role "function" (the deprecated functions API) is not supported: send tools, assistant tool_calls and role "tool" results.`
          : `messages[${i}].role must be one of system, developer, user, assistant, tool.`,
      );
    }
    if (role === 'assistant' && message.tool_calls !== undefined && message.tool_calls !== null) {
      if (!Array.isArray(message.tool_calls)) throw invalid(`messages[${i}].tool_calls must be an array.`);
      const toolCalls = message.tool_calls.map((c, j) => parseToolCall(c, `messages[${i}].tool_calls[${j}]`, `call_${i}_${j}`));
      if (toolCalls.length > 0) extras[i] = { toolCalls };
    }
    return { role, content: flattenContent(message.content, i, role) };
  });
  const parsed = parseChatRequest({ messages: mapped });
  extras.forEach((extra, i) => Object.assign(parsed[i]!, extra));
  return { messages: linkToolResults(parsed), stream: stream === true, ...(toolOptions === undefined ? {} : { tools: toolOptions }) };
}

/** A tool result's content: a string or text parts, joined. */
function toolResultText(content: unknown, i: number): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    return content
      .map((part, j) => {
        if (isObject(part) && part.type === 'text' && typeof part.text === 'string') return part.text;
        throw invalid(`messages[${i}].content[${j}] must be a text part: a tool result is text.`);
      })
      .join('');
  }
  throw invalid(`messages[${i}].content must be a string or an array of text parts.`);
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
