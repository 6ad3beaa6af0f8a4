import type { ChatHandle, ChatService, ReplySink } from '../chat/service';
import { ChatError } from '../chat/errors';
import type { AgentEvent } from '../protocol';
import type { ChatMessage, ToolCall, ToolSpec } from '../providers/types';

export type ModelReply = { ok: true; text: string; calls: ToolCall[] } | { ok: false; message: string };

export interface ModelCallDeps {
  chat: ChatService;
  emit(event: AgentEvent): void;
  /** The request under way (a stop aborts it), then undefined when it ended. */
  running(handle: ChatHandle | undefined): void;
}

/**
 * One model request: the conversation with the tools, its words shown as they come; or, without
 * `tools` (a summary), other messages whose words are not shown.
 */
export async function callModel(deps: ModelCallDeps, signal: AbortSignal, messages: ChatMessage[], tools?: ToolSpec[]): Promise<ModelReply> {
  const quiet = tools === undefined;
  let text = '';
  let unsent = '';
  const calls: ToolCall[] = [];
  const sink: ReplySink = {
    piece: (kind, piece) => {
      // Reasoning is the model's own scratch work: not part of what the agent says.
      if (kind !== 'text') return;
      text += piece;
      unsent += piece;
    },
    flush: () => {
      if (unsent === '' || quiet) return;
      deps.emit({ type: 'text', delta: unsent });
      unsent = '';
    },
    toolCall: (call) => {
      calls.push(call);
    },
    end: () => {},
  };
  let handle: ChatHandle;
  try {
    const provider = deps.chat.provider();
    handle = quiet ? deps.chat.start(provider, messages, sink) : deps.chat.start(provider, messages, sink, { tools, toolChoice: 'auto' });
  } catch (err) {
    if (err instanceof ChatError) return { ok: false, message: err.message };
    throw err;
  }
  deps.running(handle);
  const onAbort = () => handle.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const ending = await handle.done;
    sink.flush();
    if (!ending.ok) return { ok: false, message: ending.message };
    if (ending.finish === 'length' && calls.length === 0) {
      deps.emit({ type: 'error', message: 'The model stopped at its output token limit; its answer may be cut.' });
    }
    return { ok: true, text, calls };
  } finally {
    signal.removeEventListener('abort', onAbort);
    deps.running(undefined);
  }
}
