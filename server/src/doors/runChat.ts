import type { ServerResponse } from 'node:http';
import type { Ending, ReplySink } from '../chat/service';
import type { RelayContext } from '../http/context';
import type { ChatMessage, PieceKind, ProviderConfig, ToolCall, ToolOptions } from '../providers/types';

/** What a door asks the chat service for: one provider, the conversation, the tools the client offered. */
export interface ChatAsk {
  provider: ProviderConfig;
  messages: ChatMessage[];
  tools?: ToolOptions;
}

/** How a chat ended, and the model that answered (`auto` resolved) when the adapter named it. */
export interface ChatResult {
  ending: Ending;
  model: string | undefined;
}

/**
 * The one way a door runs a chat for a response: start it, `open` the response (headers out
 * before the provider is asked, so a cold model still shows a live stream), abort it when the
 * client goes away (no more quota is spent), and wait for its end.
 */
export async function runChat(res: ServerResponse, ctx: RelayContext, ask: ChatAsk, sink: ReplySink, open?: () => void): Promise<ChatResult> {
  const chat = ctx.chat.start(ask.provider, ask.messages, sink, ask.tools);
  open?.();
  res.once('close', () => chat.abort());
  const ending = await chat.done;
  return { ending, model: chat.model };
}

/** Where a non-streamed answer is kept whole (the OpenAI door's Completion, the Ollama door's reply). */
export interface Keeper {
  keep(kind: PieceKind, text: string): void;
  keepToolCall(call: ToolCall): void;
}

/** A non-streamed answer: the reply kept whole in `keeper`; undefined when the client left before it was. */
export async function collect(res: ServerResponse, ctx: RelayContext, ask: ChatAsk, keeper: Keeper): Promise<ChatResult | undefined> {
  const sink: ReplySink = {
    piece: (kind, text) => keeper.keep(kind, text),
    toolCall: (call) => keeper.keepToolCall(call),
    flush: () => undefined,
    end: () => undefined,
  };
  const result = await runChat(res, ctx, ask, sink);
  return res.destroyed ? undefined : result;
}
