import type { ServerResponse } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { TerminalEvent } from '../../chat/events';
import { parseChatRequest } from '../../chat/request';
import { SpecReply, type SpecEventWriter } from '../../chat/specReply';
import type { DoorRoute } from '../context';
import type { ResumableContext } from '.';
import { HttpError, serverStopping } from '../../http/errors';
import { SseStream } from '../../http/writers';
import type { ChatMessage } from '../../providers/types';
import { chatProvider, limitTextOnly } from '../door';
import { readJsonBody } from '../../http/request';
import type { EventLog, Frame, FrameListener } from './eventLog';
import { lastEventIdTooHigh, resumeHeaders } from './headers';
import { hashBody, type ResumableGeneration, type ResumableRegistry } from './registry';

const conflict = () =>
  new HttpError(409, 'chat.idempotency_conflict', 'This Idempotency-Key was already used with a different request body. Use a new key for a new message.');

const forgotten =
  'This reply is no longer kept on the desktop (it expired, was evicted, or was never started), so it cannot be resumed. ' +
  'Send the message again with a new Idempotency-Key.';

/**
 * `POST /v1/chat/stream` with `Idempotency-Key`: numbered events, and a generation that outlives
 * its client. The same key and body attach to the running or finished generation (replaying
 * after `Last-Event-ID`, or from the start). An unknown, expired or evicted key starts a new one,
 * unless `Last-Event-ID` says the client holds events of it: that resume gets one error event.
 * The provider is never asked twice for one key.
 */
export function resumableStreamRoute(registry: ResumableRegistry): DoorRoute<ResumableContext> {
  return {
    method: 'POST',
    path: '/v1/chat/stream',
    auth: true,
    // Without the header the request is exactly SPEC's stream (Last-Event-ID alone is ignored).
    withHeader: 'idempotency-key',
    async handle(req, res, ctx) {
      // Checked right after auth, before the body is read.
      const headers = resumeHeaders(req)!;
      const { json, raw } = await readJsonBody(req, ctx, { images: true });
      const messages = parseChatRequest(json);
      limitTextOnly(raw.length, messages);
      const token = ctx.admission.token;
      if (token === undefined) throw serverStopping();
      const scope = registry.scope(token, headers.key);
      const bodyHash = hashBody(raw);

      let entry = registry.get(scope);
      let after = 0;
      if (entry) {
        if (entry.bodyHash !== bodyHash) throw conflict();
        after = headers.lastEventId ?? 0;
        if (after > entry.log.lastId) throw lastEventIdTooHigh(after, entry.log.lastId);
        ctx.state(req).provider = entry.providerId;
      } else if (headers.lastEventId !== undefined) {
        // The client holds events of a reply the desktop no longer keeps: a new reply numbered
        // from 1 would be spliced into the old one (and the provider paid twice).
        const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
        sse.open();
        return sse.error(forgotten);
      } else {
        entry = start(req, ctx, registry, scope, bodyHash, messages, headers.key);
      }

      // Same tick as start(): the generation cannot have emitted yet, so the replay misses nothing.
      const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
      sse.open();
      // One comment at once: a client can tell a slow model (bytes arrive) from a proxy that
      // holds streamed responses back (nothing arrives) and switch to the WebSocket only then.
      sse.comment();
      await deliver(entry, sse, res, after);
    },
  };
}

function start(req: IncomingMessage, ctx: ResumableContext, registry: ResumableRegistry, scope: string, bodyHash: string, messages: ChatMessage[], key: string): ResumableGeneration {
  const provider = chatProvider(req, ctx);
  const entry = registry.prepare(bodyHash, provider.id);
  // Refused (429) before the generation is held: a refused key stays unknown.
  const chat = ctx.chat.start(provider, messages, new SpecReply(logWriter(entry.log)));
  entry.chat = chat;
  registry.add(scope, entry);
  void chat.done.then((ending) => {
    entry.finish(ending.ok);
    registry.enforceBudget();
    // Other doors hear of it (the push door tells a phone nobody is connected for).
    ctx.replies.finished({ idempotencyKey: key, ok: ending.ok, stopped: chat.signal.aborted, attached: entry.clients, replayableMs: entry.replayableMs });
  });
  return entry;
}

/** SPEC events into the generation's numbered log, which fans them out to the clients attached. */
function logWriter(log: EventLog): SpecEventWriter {
  return {
    token: (delta) => log.appendToken(delta),
    flush: () => log.flush(),
    terminal: (event: TerminalEvent) => log.appendTerminal(event),
  };
}

/** Replays what the client lacks, then forwards live events until the terminal one. */
async function deliver(entry: ResumableGeneration, sse: SseStream, res: ServerResponse, after: number): Promise<void> {
  // While replaying, live frames are left in the log: the replay reaches them there, in order.
  let replaying = true;
  const listener: FrameListener = {
    push: (frame: Frame) => {
      if (replaying) return;
      if (frame.terminal) sse.finish(frame.framed);
      else sse.write(frame.framed);
    },
    flush: () => (replaying ? undefined : sse.flush()),
  };
  // Leaving does not abort: the generation runs on for a later resume (the registry's TTL bounds it).
  res.once('close', entry.attach(listener, () => res.destroy()));
  let cursor = after;
  for (;;) {
    const replay = entry.log.since(cursor);
    // Unnumbered: this error is about the resume, not an event of the generation. A client
    // replaying slower than the generation runs can fall behind what the log keeps.
    if (!replay.ok) return sse.error(replay.message);
    if (replay.frames.length === 0) {
      // Caught up, in the same tick as `since`: nothing falls between replay and live.
      replaying = false;
      return;
    }
    for (const frame of replay.frames) {
      // Each client's replay waits for it to drain: written at once, a finished reply (its done
      // event is the whole reply again) was held in memory once per client that did not read.
      await writePaced(sse, frame.framed);
      if (sse.ended) return;
      if (frame.terminal) return sse.finish('');
      cursor = frame.id;
    }
  }
}

/** Slices of this many UTF-16 units; a done event may be megabytes in one frame. */
const REPLAY_SLICE = 64 * 1024;

async function writePaced(sse: SseStream, framed: string): Promise<void> {
  for (let at = 0; at < framed.length && !sse.ended; ) {
    let end = Math.min(at + REPLAY_SLICE, framed.length);
    // Never between the two halves of a surrogate pair: each slice is encoded on its own.
    const last = framed.charCodeAt(end - 1);
    if (end < framed.length && last >= 0xd800 && last <= 0xdbff) end--;
    const wait = sse.paced(framed.slice(at, end));
    at = end;
    if (wait) await wait;
  }
}
