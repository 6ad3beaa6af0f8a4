import { apiUrl, baseUrlOf, describeProvider, field, LIST_PAGE } from './config';
import type { Dialect, Mapper, Part } from './dialect';
import { argumentsObject, CallIds, forcedName, noName, parseObject, toolRefusal, wholeCall } from './framing';
import { toConversation, type Turn } from './turns';
import type { FinishReason, ProviderConfig, ToolCall, ToolOptions } from './types';
import { keyRefused, providerMessage, statusText, StreamFault, type HttpFailure, type WordingContext } from './wording';

interface GeminiChunk {
  error?: unknown;
  candidates?: { content?: { parts?: GeminiPart[] }; finishReason?: unknown }[];
  promptFeedback?: { blockReason?: unknown };
}

interface GeminiPart {
  text?: unknown;
  thought?: unknown;
  functionCall?: { name?: unknown; args?: unknown; id?: unknown };
  thoughtSignature?: unknown;
}

/** Reasons that end a reply normally, as finish reasons; any other finishReason means Gemini cut it off. */
const NORMAL_FINISH: Record<string, FinishReason> = { STOP: 'stop', MAX_TOKENS: 'length' };

/**
 * Google refuses a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID, not 401 (also
 * on its OpenAI-compatible endpoint, in an array): worded as a refused key.
 */
export function geminiKeyRefusal(ctx: WordingContext, f: HttpFailure): string | undefined {
  const b = Array.isArray(f.body) ? f.body[0] : f.body;
  const details = (b as { error?: { details?: unknown } } | undefined)?.error?.details;
  const refused = Array.isArray(details) && details.some((d) => (d as { reason?: unknown } | null)?.reason === 'API_KEY_INVALID');
  return refused ? keyRefused(ctx, statusText(f)) : undefined;
}

/** Gemini lists embedding and other models too; only those that answer generateContent can chat. */
function geminiNames(doc: unknown): string[] {
  const models = field(doc, 'models');
  if (!Array.isArray(models)) return [];
  return models
    .filter((m) => {
      const methods = (m as { supportedGenerationMethods?: unknown } | null)?.supportedGenerationMethods;
      return !Array.isArray(methods) || methods.includes('generateContent');
    })
    .map((m) => (m as { name?: unknown }).name)
    .filter((n): n is string => typeof n === 'string' && n !== '')
    .map((n) => n.replace(/^models\//, ''));
}

/** `streamGenerateContent?alt=sse`; the end marker is a candidate carrying `finishReason`. */
export function geminiDialect(config: ProviderConfig): Dialect {
  const base = baseUrlOf(config);
  const label = describeProvider(config);
  const model = (config.model ?? '').replace(/^models\//, '');
  const stream = apiUrl(base, `/v1beta/models/${encodeURIComponent(model)}:streamGenerateContent?alt=sse`);
  const models = apiUrl(base, `/v1beta/models?pageSize=${LIST_PAGE}`);
  return {
    key: 'required',
    framing: 'sse',
    model,
    listing: (key) => ({ url: models, headers: { 'x-goog-api-key': key! }, names: geminiNames }),
    explain: (f, { ctx, tools }) => geminiKeyRefusal(ctx, f) ?? (tools ? toolRefusal(label, model, f) : undefined),
    request: ({ messages, tools, key }) => {
      const { system, turns } = toConversation(messages);
      const body: Record<string, unknown> = {
        contents: turns.map((t) => ({ role: t.role === 'assistant' ? 'model' : 'user', parts: geminiParts(t) })),
      };
      if (system !== undefined) body.systemInstruction = { parts: [{ text: system }] };
      if (config.maxTokens !== undefined) body.generationConfig = { maxOutputTokens: config.maxTokens };
      if (tools) Object.assign(body, geminiTools(tools));
      return { url: stream, headers: { 'x-goog-api-key': key! }, body };
    },
    mapper: () => new GeminiEvents(),
  };
}

/**
 * A turn's parts: each photo an `inline_data` part (`mime_type`, base64 `data`) before the text
 * part (Gemini API docs, "Image understanding", passing inline image data, REST:
 * https://ai.google.dev/gemini-api/docs/image-understanding#inline-image).
 */
function geminiParts(t: Turn): object[] {
  const parts: object[] = (t.results ?? []).map((r) => ({ functionResponse: { name: r.name, response: { output: r.content } } }));
  for (const i of t.images ?? []) parts.push({ inline_data: { mime_type: i.mediaType, data: i.data } });
  if (t.content !== '' || (parts.length === 0 && !t.toolCalls?.length)) parts.push({ text: t.content });
  for (const c of t.toolCalls ?? []) parts.push(functionCallPart(c));
  return parts;
}

/**
 * Tools as generateContent takes them (Gemini API reference, Tool and FunctionDeclaration, listed under "Caching":
 * `tools: [{functionDeclarations: [{name, description, parametersJsonSchema}]}]`, the schema as
 * plain JSON Schema so that any client's schema is taken as written; `toolConfig.functionCallingConfig`
 * `mode` AUTO | ANY | NONE with `allowedFunctionNames` for one named tool:
 * https://ai.google.dev/api/caching#Tool, https://ai.google.dev/gemini-api/docs/function-calling).
 */
function geminiTools(options: ToolOptions): Record<string, unknown> {
  const functionDeclarations = (options.tools ?? []).map((t) => ({
    name: t.name,
    ...(t.description === undefined ? {} : { description: t.description }),
    parametersJsonSchema: t.parameters,
  }));
  const choice = options.toolChoice;
  const name = forcedName(choice);
  const body: Record<string, unknown> = { tools: [{ functionDeclarations }] };
  if (choice === undefined) return body;
  const mode = name !== undefined || choice === 'required' ? 'ANY' : choice === 'none' ? 'NONE' : 'AUTO';
  body.toolConfig = { functionCallingConfig: name !== undefined ? { mode, allowedFunctionNames: [name] } : { mode } };
  return body;
}

/**
 * Gemini gives a call no id (or one only some models send) and, from Gemini 3 on, a
 * `thoughtSignature` that must come back with the call in the history or the next request is
 * refused. Both ride in the id DeskRelay makes up, so that any client can carry them through its
 * tool loop unchanged: `<id>` or `<id>.<signature>` (a signature is base64, which has no '.').
 */
const SIGNATURE_MARK = '.';

function callId(base: string, signature: unknown): string {
  return typeof signature === 'string' && signature !== '' ? `${base}${SIGNATURE_MARK}${signature}` : base;
}

function functionCallPart(c: ToolCall): object {
  const mark = c.id.indexOf(SIGNATURE_MARK);
  const tail = mark < 0 ? '' : c.id.slice(mark + 1);
  // Only base64 after the mark is a signature: an id another provider made is sent as no signature.
  const signature = /^[A-Za-z0-9+/_-]+=*$/.test(tail) ? tail : undefined;
  return signature ? { functionCall: { name: c.name, args: c.arguments }, thoughtSignature: signature } : { functionCall: { name: c.name, args: c.arguments } };
}

class GeminiEvents implements Mapper {
  /** Made at the first tool call: most replies call none. */
  private ids: CallIds | undefined;

  map(data: string, _type: string | undefined, out: Part[]): void {
    const chunk = parseObject<GeminiChunk>(data);
    if (chunk.error !== undefined) throw StreamFault.said(providerMessage(chunk) ?? data);
    const blocked = chunk.promptFeedback?.blockReason;
    if (typeof blocked === 'string') throw StreamFault.plain(`refused the prompt (blockReason ${blocked})`);
    const candidate = chunk.candidates?.[0];
    const parts = candidate?.content?.parts;
    if (Array.isArray(parts)) {
      for (const part of parts) {
        if (typeof part.text === 'string') {
          if (part.text !== '') out.push({ kind: part.thought === true ? 'reasoning' : 'text', text: part.text });
        } else if (part.functionCall !== undefined) {
          out.push(this.toolCall(part));
        }
      }
    }
    const finish = candidate?.finishReason;
    if (typeof finish !== 'string' || finish === '' || finish === 'FINISH_REASON_UNSPECIFIED') return;
    const normal = NORMAL_FINISH[finish];
    if (normal === undefined) {
      if (finish === 'MALFORMED_FUNCTION_CALL' || finish === 'UNEXPECTED_TOOL_CALL') throw StreamFault.plain(`stopped the reply: the model made a tool call it could not complete (finishReason ${finish})`);
      throw StreamFault.plain(`stopped the reply early (finishReason ${finish})`);
    }
    out.push({ kind: 'finish', reason: normal });
  }

  /**
   * A `functionCall` part arrives whole, its `args` an object (Gemini API reference,
   * GenerateContentResponse → Candidate → Content → Part.functionCall {name, args}).
   */
  private toolCall(part: GeminiPart): Part {
    const fc = part.functionCall;
    const name = typeof fc?.name === 'string' ? fc.name : '';
    if (name === '') throw noName();
    const args = argumentsObject(name, fc?.args);
    const base = (this.ids ??= new CallIds()).next(typeof fc?.id === 'string' && !fc.id.includes(SIGNATURE_MARK) ? fc.id : undefined);
    return wholeCall(callId(base, part.thoughtSignature), name, args);
  }
}
