import type { IncomingMessage } from 'node:http';
import { checkMediaType, parseJson, readBody } from '../http/body';
import type { RelayContext } from '../http/context';

/**
 * An HTTP door's request body, checked in CONTRACT's order after auth: media type → size →
 * JSON. `raw` is what resumable streams hash to tell a repeated request from a new one.
 */
export async function readJsonBody(req: IncomingMessage, ctx: RelayContext): Promise<{ json: unknown; raw: Buffer }> {
  checkMediaType(req);
  const raw = await readBody(req, { timeoutMs: ctx.options.bodyTimeoutMs });
  return { json: parseJson(raw), raw };
}
