/**
 * Every machine-readable error code a DeskRelay response can carry (CONTRACT §3, §4, §9), with the
 * HTTP status it always comes with. The OpenAI-shaped doors map these to OpenAI's codes; a
 * WebSocket refusal closes with the code as its reason.
 */
export const ERROR_STATUS = /* @__PURE__ */ Object.freeze({
  'auth.missing_token': 401,
  'auth.invalid_token': 401,
  /** A token of a device the desk removed (the phone says it was removed, not that it must retry). */
  'auth.device_removed': 401,
  /** `POST /v1/devices/claim` with a code that is wrong, used or expired. */
  'auth.invalid_code': 401,
  /** Too many failed claims in the last minute, from anywhere (`Retry-After` says when to try again). */
  'auth.too_many_attempts': 429,
  'route.not_found': 404,
  /** Known path, wrong method; `Allow` lists the right ones. */
  'route.method_not_allowed': 405,
  'request.unsupported_media_type': 415,
  'request.body_too_large': 413,
  'request.timeout': 408,
  'request.malformed': 400,
  'request.invalid_json': 400,
  'request.invalid_body': 400,
  /** A header the relay cannot act on, a Host it does not answer for (DNS rebinding) included. */
  'request.invalid_header': 400,
  'request.upgrade_required': 426,
  'chat.no_provider': 412,
  'chat.too_many_streams': 429,
  'chat.idempotency_conflict': 409,
  /** `GET /v1/providers/<id>/models` or `PUT /v1/providers/active` names no configured provider. */
  'provider.not_found': 404,
  /** The provider did not answer its model list (worded as a stream's error). */
  'provider.unreachable': 502,
  /** The desktop does not let a phone switch its provider (allowPhoneProviderSwitch). */
  'provider.switch_disabled': 403,
  /** The provider cannot be chosen from a phone (kind `cloud`). */
  'provider.not_selectable': 400,
  /** Push notifications are turned off on the desktop. */
  'push.disabled': 403,
  /** A push subscription's endpoint is not on a browser's push service the relay sends to. */
  'push.endpoint_not_allowed': 400,
  /** The token already has the most push subscriptions the relay keeps. */
  'push.too_many_subscriptions': 409,
  /** No usable transcription provider is set. */
  'transcription.no_provider': 412,
  /** The transcription provider failed or refused the audio; the message says why. */
  'transcription.failed': 502,
  /** The path names no registered device. */
  'device.not_found': 404,
  /** Registering needs the pairing token; a device token may change only its own device. */
  'device.forbidden': 403,
  /** Registering again with a key the desk knows, without proof of holding its private half. */
  'device.proof_required': 403,
  /** A registration's proof does not verify with its key, is older or newer than 5 minutes, or was used before. */
  'device.bad_proof': 403,
  /** The desktop already has the most devices it keeps. */
  'device.too_many': 409,
  /** The pairing token, or a device the desk has not allowed, asked for the agent. */
  'agent.device_not_allowed': 403,
  /** A decision without the device's signature (approvals "device"). */
  'agent.signature_required': 403,
  /** A decision whose signature does not verify with the device's key over that call, decision and digest. */
  'agent.bad_signature': 403,
  /** The workspace agent is off on the desktop. */
  'agent.disabled': 403,
  /** No agent session (or folder) by that id: never made, deleted, dropped, or the relay restarted. */
  'agent.not_found': 404,
  /** The approval names a call that is not waiting for a decision (unknown or already decided). */
  'agent.not_pending': 409,
  /** The session is working; Merge and Discard wait until it is idle. */
  'agent.busy': 409,
  /** Undo of a file that changed since the session's last change to it (outside the session). */
  'agent.changed_outside': 409,
  /** Every agent session the desktop keeps is busy. */
  'agent.too_many_sessions': 429,
  /** Conversations are not kept on the desktop. */
  'conversations.disabled': 403,
  /** No kept conversation by that id (never made, deleted, or dropped to stay within the bounds). */
  'conversations.not_found': 404,
  /** The conversation is already replying; stop it or wait for it. */
  'conversations.busy': 409,
  /** The conversation would pass the desktop's bounds on its own; start a new one. */
  'conversations.too_large': 413,
  'server.stopping': 503,
  /** With Retry-After: the request bodies being read already hold the relay's budget (issue 21). */
  'server.busy': 503,
  'server.internal_error': 500,
});

export type ErrorCode = keyof typeof ERROR_STATUS;

/** A refusal's JSON body (every non-2xx answer of the relay's own dialect). */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; request_id?: string };
}
