import type { IncomingMessage, ServerResponse } from 'node:http';
import { adapterFor, readChat, requireProvider, runInSlot } from '../../chat/accept';
import type { RelayContext } from '../../http/context';
import { HttpError, serverStopping } from '../../http/errors';
import { runGeneration } from '../../chat/generation';
import type { ChatMessage, ProviderConfig } from '../../providers/types';
import { SseStream } from '../../http/sse';
import type { Frame } from './eventLog';
import { lastEventIdTooHigh, type ResumeHeaders } from './headers';
import { hashBody, type ResumableGeneration } from './registry';

const conflict = () =>
  new HttpError(409, 'chat.idempotency_conflict', 'This Idempotency-Key was already used with a different request body. Use a new key for a new message.');

/**
 * `POST /v1/chat/stream` with `Idempotency-Key`: numbered events, and a generation that outlives
 * its client. The same key and body attach to the running or finished generation (replaying
 * after `Last-Event-ID`, or from the start); an unknown or expired key starts a new one. The
 * provider is never asked twice for one key.
 */
export async function serveResumable(req: IncomingMessage, res: ServerResponse, ctx: RelayContext, headers: ResumeHeaders): Promise<void> {
  const { messages, raw } = await readChat(req, ctx);
  const token = ctx.token;
  if (token === undefined) throw serverStopping();
  const scope = ctx.resumable.scope(token, headers.key);
  const bodyHash = hashBody(raw);

  let entry = ctx.resumable.get(scope);
  let after = 0;
  if (entry) {
    if (entry.bodyHash !== bodyHash) throw conflict();
    after = headers.lastEventId ?? 0;
    if (after > entry.log.lastId) throw lastEventIdTooHigh(after, entry.log.lastId);
    ctx.state(req).provider = entry.providerId;
  } else {
    entry = start(ctx, scope, bodyHash, requireProvider(req, ctx), messages);
  }

  // Same tick as start(): the generation cannot have emitted yet, so the replay misses nothing.
  const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
  sse.open();
  // One comment at once: a client can tell a slow model (bytes arrive) from a proxy that
  // holds streamed responses back (nothing arrives) and switch to the WebSocket only then.
  sse.comment();
  deliver(entry, sse, res, after);
}

function start(ctx: RelayContext, scope: string, bodyHash: string, provider: ProviderConfig, messages: ChatMessage[]): ResumableGeneration {
  let entry: ResumableGeneration | undefined;
  const slot = runInSlot(ctx, (signal) => {
    const created = ctx.resumable.create(scope, bodyHash, provider.id);
    entry = created;
    return runGeneration(adapterFor(provider, ctx), messages, signal, (event) => created.log.append(event), ctx.options.logger).finally(() =>
      created.finished(),
    );
  });
  entry!.controller = slot.controller;
  return entry!;
}

/** Replays what the client lacks, then forwards live events until the terminal one. */
function deliver(entry: ResumableGeneration, sse: SseStream, res: ServerResponse, after: number): void {
  const replay = entry.log.since(after);
  // Unnumbered: this error is about the resume, not an event of the generation.
  if (!replay.ok) return sse.error(replay.message);
  const forward = (frame: Frame): void | Promise<void> => {
    if (frame.terminal) return sse.finish(frame.framed);
    return sse.paced(frame.framed);
  };
  for (const frame of replay.frames) void forward(frame);
  if (sse.ended) return;
  // Leaving does not abort: the generation runs on for a later resume (the registry's TTL bounds it).
  res.once('close', entry.attach(forward));
}
