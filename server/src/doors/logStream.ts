import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentEventLog } from '../agent/eventLog';
import type { ContextSlice } from './context';
import { HttpError } from '../http/errors';
import { SseStream } from '../http/stream';
import { EVENT_ID_RE, HEADERS } from '../protocol';

/**
 * The `Last-Event-ID` a client resumes after (0: from the start); `what` names the stream in
 * the refusal of an id it never sent ("this session", "this conversation").
 */
export function lastEventId(req: IncomingMessage, last: number, what: string): number {
  const header = req.headers[HEADERS.lastEventId.toLowerCase()];
  if (header === undefined) return 0;
  if (typeof header !== 'string' || !EVENT_ID_RE.test(header.trim())) {
    throw new HttpError(400, 'request.invalid_header', 'The Last-Event-ID header must be the number of the last event received (the value of its "id:" line).');
  }
  const after = Number(header.trim());
  if (after > last) throw new HttpError(400, 'request.invalid_header', `The Last-Event-ID header says ${after}, but ${what} has only sent events up to ${last}.`);
  return after;
}

/**
 * Serves an event log as SSE: the events after `Last-Event-ID`, then live ones, with
 * keep-alives, until the client leaves or the log closes its listeners. Shared by the agent's
 * sessions and kept conversations (one event-log mechanism).
 */
export function followLog(req: IncomingMessage, res: ServerResponse, ctx: ContextSlice<never, 'keepAliveMs'>, log: AgentEventLog<object>, what: string): void {
  const after = lastEventId(req, log.lastId, what);
  const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
  sse.open();
  sse.comment();
  const replay = log.since(after);
  // Unnumbered: it is about this resume, not an event of the stream.
  if (replay.missed) sse.write(`data: ${JSON.stringify({ type: 'error', message: replay.missed })}\n\n`);
  for (const frame of replay.frames) sse.write(frame.framed);
  const stopListening = log.listen({ push: (frame) => void sse.write(frame.framed), close: () => sse.finish('') });
  res.once('close', stopListening);
}
