import type { SpecEventWriter } from '../../chat/specReply';
import type { SseStream } from '../../http/sse';

/** SPEC events onto an SSE response: unnumbered `data:` lines, the terminal one ending it. */
export function sseWriter(sse: SseStream): SpecEventWriter {
  return {
    token: (delta) => void sse.token(delta),
    flush: () => sse.flush(),
    terminal: (event) => void sse.send(event),
  };
}
