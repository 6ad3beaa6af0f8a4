import type { Route } from '../../http/context';
import { HttpError } from '../../http/errors';
import { CancelReason } from '../../chat/generation';
import { sendJson } from '../../http/json';
import { resumeHeaders } from './headers';

export const STOPPED_BY_CLIENT = 'The reply was stopped by the client.';

/**
 * `POST /v1/chat/cancel` with the generation's `Idempotency-Key`: a resumable generation
 * outlives its connection by design, so a client's Stop needs a way to end it (and stop
 * spending quota). Its own path keeps `/v1/chat/stream`'s methods exactly SPEC's. Idempotent:
 * `cancelled` says whether a running generation was stopped by this call.
 */
export const chatCancelRoute: Route = {
  method: 'POST',
  path: '/v1/chat/cancel',
  auth: true,
  handle(req, res, ctx) {
    const headers = resumeHeaders(req);
    if (!headers) throw new HttpError(400, 'request.invalid_header', 'Send the Idempotency-Key header of the reply to stop.');
    const entry = ctx.resumable.get(ctx.resumable.scope(ctx.token ?? '', headers.key));
    const controller = entry?.controller;
    const running = controller !== undefined && !controller.signal.aborted;
    if (running) controller.abort(new CancelReason(STOPPED_BY_CLIENT));
    sendJson(res, 200, { cancelled: running });
  },
};
