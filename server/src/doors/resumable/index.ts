import type { ContextSlice } from '../context';
import type { DoorFactory } from '../door';
import { chatCancelRoute } from './cancel';
import { DEFAULT_RESUME_BUFFER_BYTES } from './eventLog';
import { DEFAULT_RESUME_BUDGET, DEFAULT_RESUME_ERROR_TTL_MS, DEFAULT_RESUME_TTL_MS, ResumableRegistry } from './registry';
import { resumableStreamRoute } from './serve';

export interface ResumableOptions {
  /** How long a generation outlives its last client, and a finished one stays replayable (120 s). */
  resumeTtlMs?: number;
  /** How long a generation that ended in an error stays replayable (30 s, never longer than resumeTtlMs). */
  resumeErrorTtlMs?: number;
  /** Framed event bytes kept per generation for replay (1 MiB); older events are dropped. */
  resumeBufferBytes?: number;
}

/**
 * What the resumable door reads of the relay: the chat service, bodies, request state, the
 * token in force (a generation belongs to it), and `replies` to say a reply ended.
 */
export type ResumableContext = ContextSlice<'chat' | 'bodies' | 'state' | 'admission' | 'replies', 'bodyTimeoutMs' | 'keepAliveMs', ResumableOptions>;

/** Resumable streams: `POST /v1/chat/stream` with an Idempotency-Key, and `POST /v1/chat/cancel`. */
export const resumableDoor: DoorFactory<ResumableContext> = (ctx) => {
  // The door's own defaults: the relay passes on only what its host set.
  const { resumeTtlMs = DEFAULT_RESUME_TTL_MS, resumeBufferBytes = DEFAULT_RESUME_BUFFER_BYTES, resumeErrorTtlMs = DEFAULT_RESUME_ERROR_TTL_MS } = ctx.options;
  const registry = new ResumableRegistry(resumeTtlMs, resumeBufferBytes, DEFAULT_RESUME_BUDGET, resumeErrorTtlMs);
  return {
    routes: [resumableStreamRoute(registry), chatCancelRoute(registry)],
    stop: () => registry.clear(),
  };
};
