import type { IncomingMessage } from 'node:http';
import { carriesImages } from '../chat/request';
import { checkMediaType, MAX_BODY_BYTES, parseJson, readBody, tooLarge } from '../http/body';
import type { RelayContext } from '../http/context';
import type { ChatMessage, ProviderConfig } from '../providers/types';

/** A chat request carrying images may be this large (issue 13); every other request keeps MAX_BODY_BYTES. */
export const MAX_IMAGE_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Only a message whose content is an array can hold an image; a JSON string cannot hold this
 * byte sequence (its quotes are escaped), so a body without it in its first MiB is text only.
 */
const CONTENT_ARRAY = /"content"\s*:\s*\[/;

export interface BodyLimit {
  /**
   * The route takes chat requests that may carry images: up to MAX_IMAGE_BODY_BYTES when they do.
   * A RegExp is the route's own sign of images in the body's first MiB (Ollama's `"images":[`).
   */
  images?: boolean | RegExp;
}

/**
 * An HTTP door's request body, checked in CONTRACT's order after auth: media type → size →
 * JSON. `raw` is what resumable streams hash to tell a repeated request from a new one. With
 * `images`, the body may pass 1 MiB only while its first MiB shows content given as parts;
 * the door then calls `limitTextOnly` once it has parsed the messages.
 */
export async function readJsonBody(req: IncomingMessage, ctx: RelayContext, limit: BodyLimit = {}): Promise<{ json: unknown; raw: Buffer }> {
  checkMediaType(req);
  const marker = limit.images instanceof RegExp ? limit.images : CONTENT_ARRAY;
  const raw = await readBody(
    req,
    limit.images
      ? {
          timeoutMs: ctx.options.bodyTimeoutMs,
          budget: ctx.bodies,
          maxBytes: MAX_IMAGE_BODY_BYTES,
          softMaxBytes: MAX_BODY_BYTES,
          mayGrow: (prefix) => marker.test(prefix.toString('latin1')),
        }
      : { timeoutMs: ctx.options.bodyTimeoutMs, budget: ctx.bodies },
  );
  return { json: parseJson(raw), raw };
}

/** 413 for a chat request over 1 MiB that carries no image after all (read whole, so the connection stays). */
export function limitTextOnly(size: number, messages: readonly ChatMessage[]): void {
  if (size > MAX_BODY_BYTES && !carriesImages(messages)) {
    throw tooLarge(MAX_BODY_BYTES, ` (only requests carrying images may be up to ${MAX_IMAGE_BODY_BYTES / 1024 / 1024} MiB)`, false);
  }
}

/** The provider this chat request gets (412 when none), noted for the request log line. */
export function chatProvider(req: IncomingMessage, ctx: RelayContext): ProviderConfig {
  const provider = ctx.chat.provider();
  ctx.state(req).provider = provider.id;
  return provider;
}
