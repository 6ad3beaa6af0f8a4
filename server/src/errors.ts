/**
 * The error a request fails with, below both the chat core (chat/) and the HTTP front (http/):
 * the chat service refuses with it, the funnel renders it in the route's dialect.
 */

/** Every machine-readable code a DeskRelay response can carry (CONTRACT §3). */
export type ErrorCode =
  | 'auth.missing_token'
  | 'auth.invalid_token'
  /** 401: a token of a device the desk removed (the phone says it was removed, not that it must retry). */
  | 'auth.device_removed'
  /** 401: `POST /v1/devices/claim` with a code that is wrong, used or expired. */
  | 'auth.invalid_code'
  /** 429: too many failed claims in the last minute, from anywhere (`Retry-After` says when to try again). */
  | 'auth.too_many_attempts'
  | 'route.not_found'
  | 'route.method_not_allowed'
  | 'request.unsupported_media_type'
  | 'request.body_too_large'
  | 'request.timeout'
  | 'request.malformed'
  | 'request.invalid_json'
  | 'request.invalid_body'
  /** 400: a header the relay cannot act on, a Host it does not answer for (DNS rebinding) included. */
  | 'request.invalid_header'
  | 'request.upgrade_required'
  | 'chat.no_provider'
  | 'chat.too_many_streams'
  | 'chat.idempotency_conflict'
  /** 404: `GET /v1/providers/<id>/models` or `PUT /v1/providers/active` names no configured provider. */
  | 'provider.not_found'
  /** 502: the provider did not answer its model list (worded as a stream's error). */
  | 'provider.unreachable'
  /** 403: the desktop does not let a phone switch its provider (allowPhoneProviderSwitch). */
  | 'provider.switch_disabled'
  /** 400: the provider cannot be chosen from a phone (kind `cloud`). */
  | 'provider.not_selectable'
  /** 403: push notifications are turned off on the desktop (deskrelay.pushNotifications, "pushNotifications"). */
  | 'push.disabled'
  /** 400: a push subscription's endpoint is not on a browser's push service the relay sends to. */
  | 'push.endpoint_not_allowed'
  /** 409: the token already has the most push subscriptions the relay keeps. */
  | 'push.too_many_subscriptions'
  /** 412: no usable transcription provider is set ("transcription" in config.json, deskrelay.transcription). */
  | 'transcription.no_provider'
  /** 502: the transcription provider failed or refused the audio; the message says why. */
  | 'transcription.failed'
  /** 404: `DELETE /v1/devices/<id>` names no registered device. */
  | 'device.not_found'
  /** 403: registering needs the pairing token; a device token may remove only its own device. */
  | 'device.forbidden'
  /** 409: the desktop already has the most devices it keeps. */
  | 'device.too_many'
  /** 403: the pairing token, or a device the desk has not allowed, asked for the agent. */
  | 'agent.device_not_allowed'
  /** 403: a decision without the device's signature (approvals "device"). */
  | 'agent.signature_required'
  /** 403: a decision whose signature does not verify with the device's key over that call, decision and digest. */
  | 'agent.bad_signature'
  /** 403: the workspace agent is off on the desktop (`--agent DIR`, "agent" in config.json, deskrelay.agent.enabled). */
  | 'agent.disabled'
  /** 404: no agent session (or folder) by that id: never made, deleted, dropped, or the relay restarted. */
  | 'agent.not_found'
  /** 409: the approval names a call that is not waiting for a decision (unknown or already decided). */
  | 'agent.not_pending'
  /** 409: the session is working; Merge and Discard wait until it is idle. */
  | 'agent.busy'
  /** 409: Undo of a file that changed since the session's last change to it (outside the session). */
  | 'agent.changed_outside'
  /** 429: every agent session the desktop keeps is busy. */
  | 'agent.too_many_sessions'
  /** 403: conversations are not kept on the desktop (deskrelay.keepConversations, "keepConversations"). */
  | 'conversations.disabled'
  /** 404: no kept conversation by that id (never made, deleted, or dropped to stay within the bounds). */
  | 'conversations.not_found'
  /** 409: the conversation is already replying; stop it or wait for it. */
  | 'conversations.busy'
  /** 413: the conversation would pass the desktop's bounds on its own; start a new one. */
  | 'conversations.too_large'
  | 'server.stopping'
  /** 503 with Retry-After: the request bodies being read already hold the relay's budget (issue 21). */
  | 'server.busy'
  | 'server.internal_error';

/** A failure that becomes the CONTRACT error body. Its message is shown to users, so it must be safe. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Close the connection after answering, instead of reading what the client still sends. */
    readonly closeConnection = false,
  ) {
    super(message);
  }
}
