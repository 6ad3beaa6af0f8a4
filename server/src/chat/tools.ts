import { HttpError } from '../errors';
import type { ChatMessage, ToolCall, ToolChoice, ToolSpec } from '../providers/types';

/** Tools one request may offer at most (issue 22). */
export const MAX_TOOLS = 128;
/** One tool definition at most this large, as JSON (UTF-16 code units). */
export const MAX_TOOL_DEFINITION_CHARS = 64 * 1024;

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);
const tooLarge = (message: string) => new HttpError(413, 'request.body_too_large', message);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

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
