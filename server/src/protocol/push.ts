/** Web Push payloads (issue 15): where to look, never a reply's text, a file or a command. */

/** The door's paths. */
export const PUSH_PATHS = /* @__PURE__ */ Object.freeze({
  /** GET: the desktop's VAPID public key. */
  pushKey: '/v1/push/key',
  /** POST a browser's PushSubscription JSON; DELETE `{"endpoint"}`. */
  pushSubscriptions: '/v1/push/subscriptions',
});

/** `GET /v1/push/key`: the desktop's VAPID public key (base64url), for `PushManager.subscribe`. */
export interface PushKey {
  publicKey: string;
}

/** A reply is ready: which one, and whether it ended well. */
export interface ReplyReadyPush {
  type: 'reply_ready';
  idempotencyKey: string;
  ok: boolean;
}

/** The agent waits for a decision, or its turn ended. */
export type AgentPush = { type: 'agent_needs_you'; session: string; callId: string } | { type: 'agent_idle'; session: string };
