import type { DoorRoute } from '../context';
import type { ChatDoorContext } from '.';
import { SERVICE_NAME } from './infoRecord';
import { sendJson } from '../../http/writers';

/** Unauthenticated liveness probe; the tunnel helper polls it through the public URL. */
export const healthRoute: DoorRoute<ChatDoorContext> = {
  method: 'GET',
  path: '/v1/health',
  auth: false,
  handle(_req, res, ctx) {
    sendJson(res, 200, { status: 'ok', service: SERVICE_NAME, version: ctx.options.version });
  },
};
