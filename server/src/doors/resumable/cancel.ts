import { CancelReason, STOPPED_BY_CLIENT } from '../../chat/events';
import { HttpError } from '../../http/errors';
import { sendJson } from '../../http/writers';
import type { DoorRoute } from '../context';
import type { ResumableContext } from '.';
import { resumeHeaders } from './headers';
import type { ResumableRegistry } from './registry';

export { STOPPED_BY_CLIENT };

/**
 * `POST /v1/chat/cancel` with the generation's `Idempotency-Key`: a resumable generation
 * outlives its connection by design, so a client's Stop needs a way to end it (and stop
 * spending quota). Its own path keeps `/v1/chat/stream`'s methods exactly SPEC's. Idempotent:
 * `cancelled` says whether a running generation was stopped by this call.
 */
export function chatCancelRoute(registry: ResumableRegistry): DoorRoute<ResumableContext> {
  return {
    method: 'POST',
    path: '/v1/chat/cancel',
    auth: true,
    handle(req, res, ctx) {
      const headers = resumeHeaders(req);
      if (!headers) throw new HttpError(400, 'request.invalid_header', 'Send the Idempotency-Key header of the reply to stop.');
      const chat = registry.get(registry.scope(ctx.admission.token ?? '', headers.key))?.chat;
      const running = chat !== undefined && !chat.signal.aborted;
      if (running) chat.abort(new CancelReason(STOPPED_BY_CLIENT));
      sendJson(res, 200, { cancelled: running });
    },
  };
}
