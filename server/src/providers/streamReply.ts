import type { ProviderCall } from './call';
import type { EventHandler, LineHandler } from './framing';
import type { FinishReason, PieceSink } from './types';

/** A reader knows, once the stream ends, how the reply finished (undefined: it was cut short). */
interface Finishing {
  finish: FinishReason | undefined;
}

/** One adapter's request: where, its own headers and body, and the reader of its framing. */
export type StreamRequest = { url: string; headers: Record<string, string>; body: unknown } & ({ sse: EventHandler & Finishing } | { ndjson: LineHandler & Finishing });

/**
 * The adapters' one request-stream-parse path. `request` picks the model and builds the body
 * inside it, so the call is closed however it ends; the reply is POSTed for, its stream fed to the
 * reader in its framing, and a stream that ends before the reader saw the finish is truncated.
 */
export async function streamReply(call: ProviderCall, sink: PieceSink, request: () => Promise<StreamRequest> | StreamRequest): Promise<FinishReason> {
  try {
    const r = await request();
    const accept = 'ndjson' in r ? 'application/x-ndjson' : 'text/event-stream';
    const res = await call.send(r.url, { method: 'POST', headers: { ...r.headers, accept }, body: r.body });
    const reader = 'ndjson' in r ? r.ndjson : r.sse;
    if ('ndjson' in r) await call.lines(res, r.ndjson, sink);
    else await call.events(res, r.sse, sink);
    if (reader.finish === undefined) throw call.truncated();
    return reader.finish;
  } finally {
    call.close();
  }
}
