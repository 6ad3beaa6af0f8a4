import type { DoorFactory } from '../door';
import { chatCancelRoute } from './cancel';
import { DEFAULT_RESUME_BUDGET, ResumableRegistry } from './registry';
import { resumableStreamRoute } from './serve';

/** Resumable streams: `POST /v1/chat/stream` with an Idempotency-Key, and `POST /v1/chat/cancel`. */
export const resumableDoor: DoorFactory = (ctx) => {
  const { resumeTtlMs, resumeBufferBytes, resumeErrorTtlMs } = ctx.options;
  const registry = new ResumableRegistry(resumeTtlMs, resumeBufferBytes, DEFAULT_RESUME_BUDGET, resumeErrorTtlMs);
  return {
    routes: [resumableStreamRoute(registry), chatCancelRoute(registry)],
    stop: () => registry.clear(),
  };
};
