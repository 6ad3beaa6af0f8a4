import type { DoorRoute } from '../context';
import type { ChatDoorContext } from '.';
import { hostname, type InfoRecord, SERVICE_NAME } from './infoRecord';
import { sendJson } from '../../http/writers';

/** The pairing probe: cheap, computed per request, exactly SPEC §2.1's five fields. */
export const infoRoute: DoorRoute<ChatDoorContext> = {
  method: 'GET',
  path: '/v1/remote/info',
  auth: true,
  handle(_req, res, ctx) {
    const record: InfoRecord = {
      service: SERVICE_NAME,
      version: ctx.options.version,
      hostname: hostname(),
      providerConfigured: ctx.options.providers.active().ok,
      workspaces: ctx.options.workspaces(),
    };
    sendJson(res, 200, record);
  },
};
