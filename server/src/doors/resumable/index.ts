import type { DoorFactory } from '../door';
import { chatCancelRoute } from './cancel';
import { ResumableRegistry } from './registry';
import { resumableStreamRoute } from './serve';

/** Resumable streams: `POST /v1/chat/stream` with an Idempotency-Key, and `POST /v1/chat/cancel`. */
export const resumableDoor: DoorFactory = (ctx) => {
  const { resumeTtlMs, resumeBufferBytes } = ctx.options;
  const registry = new ResumableRegistry(resumeTtlMs, resumeBufferBytes);
  return {
    routes: [resumableStreamRoute(registry), chatCancelRoute(registry)],
    stop: () => registry.clear(),
  };
};
