import type { ContextSlice, DoorRoute } from '../context';
import { HttpError, serverStopping } from '../../http/errors';
import { sendJson, sendNoContent } from '../../http/writers';
import type { DoorFactory } from '../door';
import { invalidBody as invalid, jsonObject, readJsonBody } from '../../http/request';
import { PATHS, type AgentPush, type PushKey, type ReplyReadyPush } from '../../protocol';
import type { ReplyFinished } from '../replyEvents';
import { checkEndpoint, pushHostsFromEnv } from './endpoint';
import { PUSH_TIMEOUT_MS, sendPush, type PushOutcome, type PushTarget } from './send';
import { loadVapidKeys, type VapidKeys } from './vapid';

/** Subscriptions at most per token: a person's phones and browsers, not a mailing list. */
export const MAX_SUBSCRIPTIONS = 10;

/**
 * Pushes being sent at once, over all subscriptions and replies. Each holds a TLS connection
 * for up to its deadline; past the cap a push is dropped with a log line rather than queued, as
 * a reply that ends while the service is this slow is better fetched by the phone itself.
 */
export const MAX_PUSHES_IN_FLIGHT = 16;
/** An agent's push stays deliverable this long: a decision waits in memory until the relay stops. */
const AGENT_PUSH_TTL_SECONDS = 60 * 60;

/** The door's paths (PATHS.pushKey and PATHS.pushSubscriptions in the shared protocol). */
export const PUSH_KEY_PATH = PATHS.pushKey;
export const PUSH_SUBSCRIPTIONS_PATH = PATHS.pushSubscriptions;

const disabled = () =>
  new HttpError(403, 'push.disabled', 'Push notifications are turned off on the desktop ("deskrelay.pushNotifications" in the editor, "pushNotifications" in config.json).');

/** A base64url (padding allowed) string decoding to exactly `bytes` bytes, or undefined. */
function base64urlOf(value: unknown, bytes: number): string | undefined {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]+={0,2}$/.test(value)) return undefined;
  const decoded = Buffer.from(value, 'base64url');
  return decoded.length === bytes ? decoded.toString('base64url') : undefined;
}

const SUBSCRIPTION_SHAPE = '{"endpoint":"https://…","keys":{"p256dh":"…","auth":"…"}} (a PushSubscription\'s toJSON())';

/** A browser's `PushSubscription.toJSON()`, checked: the endpoint (see checkEndpoint) and the keys RFC 8291 encrypts to. */
export function parseSubscription(json: unknown, extraHosts: readonly string[]): PushTarget {
  const body = jsonObject(json, SUBSCRIPTION_SHAPE);
  const endpoint = checkEndpoint(body.endpoint, extraHosts);
  const keys = typeof body.keys === 'object' && body.keys !== null ? (body.keys as Record<string, unknown>) : {};
  const p256dh = base64urlOf(keys.p256dh, 65);
  if (!p256dh || Buffer.from(p256dh, 'base64url')[0] !== 0x04) throw invalid('keys.p256dh must be the subscription\'s P-256 public key: 65 bytes, uncompressed, base64url.');
  const auth = base64urlOf(keys.auth, 16);
  if (!auth) throw invalid('keys.auth must be the subscription\'s authentication secret: 16 bytes, base64url.');
  return { endpoint, keys: { p256dh, auth } };
}

/**
 * Web Push when a resumable reply ends with nobody connected (issue 15). Subscriptions belong to
 * the token in force: they are kept in memory for this relay run only, so a new token (restart,
 * rotation) starts with none and a phone subscribes again when it pairs. The VAPID key pair is
 * the desktop's, kept in the config dir (vapid.ts).
 */
export interface PushOptions {
  /**
   * Web Push when a resumable reply ends with no client connected; read on every use, so a
   * settings change applies at once. Default on.
   */
  pushNotifications?: () => boolean;
  /**
   * Push services the relay may send to besides the browsers' own (FCM, Mozilla, Apple,
   * Windows): hostnames, `host:port`, or `*.suffix`. For tests with a stand-in push service;
   * default: `$DESKRELAY_PUSH_HOSTS`, comma-separated, else none.
   */
  pushHosts?: readonly string[];
  /** How long one push may take, all of it, before it is given up (10 s). Tests shorten it. */
  pushTimeoutMs?: number;
}

/**
 * What the push door reads of the relay: the devices (a removed one's subscriptions go) and
 * whether it is stopping, `replies` to hear of ended replies and the agent's asks, bodies,
 * request state, where its key file goes and the log.
 */
export type PushContext = ContextSlice<'admission' | 'replies' | 'bodies' | 'state', 'configDir' | 'logger' | 'bodyTimeoutMs', PushOptions>;

export const pushDoor: DoorFactory<PushContext> = (ctx) => {
  const subscriptions = new Map<string, PushTarget>();
  /** Which device subscribed each endpoint (issue 26): a removed device's subscriptions go with it. */
  const owners = new Map<string, string>();
  const dropDevice = ctx.admission.devices?.onChange((change) => {
    if (change.type !== 'revoked') return;
    for (const [id, owner] of owners) {
      if (owner !== change.device.id) continue;
      subscriptions.delete(id);
      owners.delete(id);
    }
  });
  const { logger } = ctx.options;
  let keys: Promise<VapidKeys> | undefined;
  const vapid = (): Promise<VapidKeys> => {
    keys ??= loadVapidKeys(ctx.options.configDir, logger).catch((err: unknown) => {
      keys = undefined;
      logger.error(`push: cannot read or write the Web Push key file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      throw new HttpError(500, 'server.internal_error', 'The desktop could not read or make its push key.');
    });
    return keys;
  };
  // The door's own defaults: on, the browsers' push services (plus DESKRELAY_PUSH_HOSTS), 10 s per push.
  const enabled = () => ctx.options.pushNotifications?.() ?? true;
  const pushHosts = ctx.options.pushHosts ?? pushHostsFromEnv();
  let stopped = false;
  let inFlight = 0;

  const keyRoute: DoorRoute<PushContext> = {
    method: 'GET',
    path: PUSH_KEY_PATH,
    auth: true,
    async handle(_req, res) {
      if (!enabled()) throw disabled();
      const { publicKey } = await vapid();
      sendJson(res, 200, { publicKey } satisfies PushKey);
    },
  };

  const subscribeRoute: DoorRoute<PushContext> = {
    method: 'POST',
    path: PUSH_SUBSCRIPTIONS_PATH,
    auth: true,
    async handle(req, res, c) {
      if (!enabled()) throw disabled();
      const { json } = await readJsonBody(req, c);
      const target = parseSubscription(json, pushHosts);
      const id = target.endpoint.href;
      // Make the key now, so the first push does not wait for it.
      await vapid();
      if (stopped) throw serverStopping();
      // Checked after the wait, so subscriptions posted at once cannot pass the limit together.
      if (!subscriptions.has(id) && subscriptions.size >= MAX_SUBSCRIPTIONS) {
        throw new HttpError(
          409,
          'push.too_many_subscriptions',
          `The desktop keeps at most ${MAX_SUBSCRIPTIONS} push subscriptions; remove one (DELETE /v1/push/subscriptions) or pair again.`,
        );
      }
      // The same endpoint again: its keys are replaced (a browser that renewed them).
      subscriptions.set(id, target);
      const device = c.state(req).device;
      if (device !== undefined) owners.set(id, device);
      else owners.delete(id);
      sendJson(res, 201, { endpoint: id });
    },
  };

  const unsubscribeRoute: DoorRoute<PushContext> = {
    method: 'DELETE',
    path: PUSH_SUBSCRIPTIONS_PATH,
    auth: true,
    async handle(req, res, c) {
      const { json } = await readJsonBody(req, c);
      const { endpoint } = jsonObject(json, '{"endpoint":"https://…"}');
      if (typeof endpoint !== 'string' || endpoint === '') throw invalid('endpoint must be the endpoint of a subscription made before.');
      let id = endpoint;
      try {
        id = new URL(endpoint).href;
      } catch {
        // Not a URL: nothing was subscribed under it.
      }
      subscriptions.delete(id);
      owners.delete(id);
      sendNoContent(res);
    },
  };

  async function notify(event: ReplyFinished): Promise<void> {
    const payload: ReplyReadyPush = { type: 'reply_ready', idempotencyKey: event.idempotencyKey, ok: event.ok };
    // The push lives as long as the reply can still be fetched; after that it would lead nowhere.
    await broadcast(JSON.stringify(payload), Math.max(1, Math.ceil(event.replayableMs / 1000)));
  }

  /** Sends one payload to every subscription, forgetting those the push service says are gone. */
  async function broadcast(text: string, ttlSeconds: number): Promise<void> {
    const pair = await vapid();
    await Promise.all(
      [...subscriptions].map(async ([id, target]) => {
        // The endpoint is a capability URL: only its host is logged.
        const host = target.endpoint.host;
        if (inFlight >= MAX_PUSHES_IN_FLIGHT) {
          logger.warn(`push: not sent to ${host}: ${MAX_PUSHES_IN_FLIGHT} pushes are already in flight`);
          return;
        }
        inFlight++;
        let outcome: PushOutcome;
        try {
          outcome = await sendPush(target, text, pair, { ttlSeconds, timeoutMs: ctx.options.pushTimeoutMs ?? PUSH_TIMEOUT_MS });
        } catch (err) {
          outcome = { outcome: 'failed', reason: err instanceof Error ? err.name : typeof err };
        } finally {
          inFlight--;
        }
        if (outcome.outcome === 'gone') {
          if (subscriptions.get(id) === target) {
            subscriptions.delete(id);
            owners.delete(id);
          }
          logger.info(`push: ${host} answered ${outcome.status}: the subscription is gone and was removed`);
        } else if (outcome.outcome === 'failed') {
          logger.warn(`push: not delivered to ${host}: ${outcome.reason}`);
        }
      }),
    );
  }

  const unsubscribe = ctx.replies.onFinished((event) => {
    // A client still connected sees the reply end itself; a reply stopped on purpose (the phone's
    // Stop, nobody resuming it, the relay stopping) has nothing to tell.
    if (event.attached > 0 || event.stopped || subscriptions.size === 0 || ctx.admission.stopping || stopped || !enabled()) return;
    void notify(event).catch((err: unknown) => logger.warn(`push: not sent (${err instanceof Error ? err.message : typeof err})`));
  });

  // The agent's pushes carry no file text and no command: only which session needs the phone.
  const unsubscribeAgent = ctx.replies.onAgentPush((payload: AgentPush) => {
    if (subscriptions.size === 0 || ctx.admission.stopping || stopped || !enabled()) return;
    void broadcast(JSON.stringify(payload), AGENT_PUSH_TTL_SECONDS).catch((err: unknown) => logger.warn(`push: not sent (${err instanceof Error ? err.message : typeof err})`));
  });

  return {
    routes: [keyRoute, subscribeRoute, unsubscribeRoute],
    stop() {
      stopped = true;
      unsubscribe();
      dropDevice?.();
      unsubscribeAgent();
      subscriptions.clear();
      owners.clear();
    },
  };
};
