import { parseChatRequest } from '../../chat/request';
import { SpecReply } from '../../chat/specReply';
import type { DoorRoute } from '../context';
import type { ChatDoorContext } from '.';
import { SseStream } from '../../http/writers';
import { chatProvider, limitTextOnly, startChat } from '../door';
import { readJsonBody } from '../../http/request';

/** SPEC's `POST /v1/chat/stream`: a chat request in, SPEC events out as SSE. */
export const chatStreamRoute: DoorRoute<ChatDoorContext> = {
  method: 'POST',
  path: '/v1/chat/stream',
  auth: true,
  async handle(req, res, ctx) {
    const { json, raw } = await readJsonBody(req, ctx, { images: true });
    const messages = parseChatRequest(json);
    limitTextOnly(raw.length, messages);
    const provider = chatProvider(req, ctx);
    const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
    // Returns once the chat started: the stream goes on in the chat service (startChat says why).
    startChat(res, ctx, { provider, messages }, new SpecReply(sse), () => sse.open());
  },
};
