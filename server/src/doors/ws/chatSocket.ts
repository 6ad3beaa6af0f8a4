import type { IncomingMessage } from 'node:http';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { MAX_IMAGE_BODY_BYTES, parseJson, requestState } from '../../http/request';
import { chatProvider, limitTextOnly } from '../door';
import { parseChatRequest } from '../../chat/request';
import type { DoorRoute } from '../context';
import type { SocketContext } from '.';
import { HttpError, serverStopping } from '../../http/errors';
import { CancelReason, type ChatEvent } from '../../chat/events';
import type { ChatHandle, ChatSlot } from '../../chat/service';
import { SpecReply } from '../../chat/specReply';
import { refusalOf } from '../errors';
import { authenticateSocket, SOCKET_PROTOCOL } from './auth';
import { refuseUpgrade } from '../../http/upgrade';
import { describeSocketError } from './frameErrors';
import { PATHS } from '../../protocol';

export const CHAT_SOCKET_PATH = PATHS.chatSocket;

/**
 * Close codes: 1000 after the terminal `done`/`error` event of a generation; 1008 (policy
 * violation) after an `error` event refusing the request itself (reason: the CONTRACT code, e.g.
 * `request.invalid_body`, `chat.no_provider`); 1001 when the relay stops before a request came.
 */
const CLOSE_NORMAL = 1000;
const CLOSE_GOING_AWAY = 1001;
const CLOSE_POLICY = 1008;
/** Above this many unsent bytes the provider waits for the client (as the SSE writer's drain does). */
const HIGH_WATER_BYTES = 64 * 1024;

/**
 * `GET /v1/chat/ws`. The funnel admits the handshake like any request (Host, stopping, the
 * token by header or subprotocol) and calls `upgrade`; a plain GET gets a clear 426 and other
 * methods a 405.
 */
export const chatSocketRoute: DoorRoute<SocketContext> = {
  method: 'GET',
  path: CHAT_SOCKET_PATH,
  auth: authenticateSocket,
  handle() {
    throw new HttpError(426, 'request.upgrade_required', `${CHAT_SOCKET_PATH} is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket).`, {
      Upgrade: 'websocket',
    });
  },
  upgrade(req, socket, head, ctx) {
    const state = ctx.state(req);
    // The concurrency limit applies at the handshake: its 429 is thrown to the funnel as a refusal.
    const slot = ctx.chat.reserve();
    // A handshake that fails (or a socket that closes before its request) gives the slot back.
    socket.once('close', () => slot.release());
    socketServer().handleUpgrade(req, socket, head, (ws) => {
      // A frame ws rejects (no mask, 1 GiB announced, RSV bits…) closes this socket with its
      // code; unheard, the error would end the process and every stream in it.
      ws.on('error', (err) => ctx.options.logger.warn(describeSocketError(state.id, err)));
      ws.once('close', () => ctx.logRequest(req, CHAT_SOCKET_PATH, 101));
      void serveChatSocket(ws, req, ctx, slot);
    });
  },
};

let wss: WebSocketServer | undefined;

/** One handshake engine for every relay: it keeps no per-relay state (no server, no client list). */
function socketServer(): WebSocketServer {
  if (wss) return wss;
  wss = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    // A request carrying images may be 10 MiB; one without is held to 1 MiB once parsed.
    maxPayload: MAX_IMAGE_BODY_BYTES,
    // Only ever `deskrelay`: selecting the bearer subprotocol would echo the token.
    handleProtocols: (protocols) => (protocols.has(SOCKET_PROTOCOL) ? SOCKET_PROTOCOL : false),
  });
  // Only a listening server emits it; noServer has none, but an unheard one would still throw.
  wss.on('error', () => {});
  wss.on('headers', (headers, req) => headers.push(`X-Request-Id: ${requestState(req).id}`));
  // A malformed handshake (no Sec-WebSocket-Key, bad version…) also gets the CONTRACT body.
  wss.on('wsClientError', (err, socket, req) => refuseUpgrade(socket, requestState(req).id, new HttpError(400, 'request.invalid_header', `${err.message}.`)));
  return wss;
}

type FirstMessage = { kind: 'message'; data: RawData; isBinary: boolean } | { kind: 'closed' } | { kind: 'aborted' } | { kind: 'timeout' };

/** One chat over one socket: the first text message is the request, then the SPEC events, then close. */
async function serveChatSocket(ws: WebSocket, req: IncomingMessage, ctx: SocketContext, slot: ChatSlot): Promise<void> {
  let chat: ChatHandle | undefined;
  // A client that leaves ends the chat at once; the slot's signal is the relay stopping.
  ws.once('close', () => chat?.abort());
  // Pings keep tunnels and proxies from timing out a quiet socket, like the SSE keep-alive.
  const ping = setInterval(() => ws.readyState === WebSocket.OPEN && ws.ping(), ctx.options.keepAliveMs);
  ping.unref();

  /** Set when the client is not keeping up: the chat reads nothing more from the provider until it drains. */
  let behind: Promise<void> | undefined;
  const send = (json: string): void => {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount < HIGH_WATER_BYTES) return ws.send(json);
    behind = new Promise((resolve) => ws.send(json, () => resolve()));
  };
  const event = (e: ChatEvent) => send(JSON.stringify(e));
  const refuse = (code: number, err: HttpError) => {
    slot.release();
    event({ type: 'error', message: err.message });
    ws.close(code, err.code);
  };

  try {
    const first = await firstMessage(ws, slot.signal, ctx.options.bodyTimeoutMs);
    if (first.kind === 'closed') return slot.release();
    if (first.kind === 'aborted') {
      const reason: unknown = slot.signal.reason;
      return refuse(CLOSE_GOING_AWAY, reason instanceof CancelReason ? new HttpError(503, 'server.stopping', reason.message) : serverStopping());
    }
    if (first.kind === 'timeout') {
      return refuse(CLOSE_POLICY, new HttpError(408, 'request.timeout', `No chat request arrived within ${ctx.options.bodyTimeoutMs / 1000} s.`));
    }
    if (first.isBinary) {
      return refuse(CLOSE_POLICY, new HttpError(400, 'request.invalid_json', 'Send the chat request as a text message holding JSON.'));
    }
    let messages;
    let provider;
    try {
      const raw = toBuffer(first.data);
      messages = parseChatRequest(parseJson(raw));
      limitTextOnly(raw.length, messages);
      provider = chatProvider(req, ctx);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal) return refuse(CLOSE_POLICY, refusal);
      throw err;
    }
    chat = slot.start(
      provider,
      messages,
      new SpecReply({
        token: (delta) => event({ type: 'token', delta }),
        flush: () => {
          const wait = behind;
          behind = undefined;
          return wait;
        },
        terminal: (e) => {
          event(e);
          if (ws.readyState === WebSocket.OPEN) ws.close(CLOSE_NORMAL);
        },
      }),
    );
    await chat.done;
  } finally {
    slot.release();
    clearInterval(ping);
  }
}

/** Later messages are ignored: one socket carries one request. */
function firstMessage(ws: WebSocket, signal: AbortSignal, timeoutMs: number): Promise<FirstMessage> {
  return new Promise((resolve) => {
    const finish = (result: FirstMessage) => {
      clearTimeout(timer);
      ws.off('message', onMessage).off('close', onClose);
      signal.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const onMessage = (data: RawData, isBinary: boolean) => finish({ kind: 'message', data, isBinary });
    const onClose = () => finish({ kind: 'closed' });
    const onAbort = () => finish(ws.readyState === WebSocket.OPEN ? { kind: 'aborted' } : { kind: 'closed' });
    const timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs);
    ws.on('message', onMessage).on('close', onClose);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
