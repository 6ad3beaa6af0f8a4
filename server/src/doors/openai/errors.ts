import type { ServerResponse } from 'node:http';
import type { ErrorCode, HttpError } from '../../http/errors';
import { sendJson } from '../../http/writers';

/** OpenAI's error object: what the `openai` SDKs parse into their typed errors. */
export interface OpenAiError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** DeskRelay codes as OpenAI-style codes; the HTTP status stays DeskRelay's. */
const CODES: Partial<Record<ErrorCode, string>> = {
  'auth.missing_token': 'invalid_api_key',
  'auth.invalid_token': 'invalid_api_key',
  'auth.device_removed': 'invalid_api_key',
  'request.unsupported_media_type': 'unsupported_media_type',
  'request.body_too_large': 'request_too_large',
  'request.timeout': 'timeout',
  'request.invalid_json': 'invalid_json',
  'request.invalid_body': 'invalid_value',
  'chat.no_provider': 'model_not_found',
  'transcription.no_provider': 'model_not_found',
  'transcription.failed': 'provider_error',
  'chat.too_many_streams': 'rate_limit_exceeded',
  'server.stopping': 'server_stopping',
  'server.busy': 'rate_limit_exceeded',
  'server.internal_error': 'internal_error',
};

export function openAiError(err: HttpError): OpenAiError {
  const type = err.status === 429 ? 'requests' : err.status >= 500 ? 'server_error' : 'invalid_request_error';
  return { message: err.message, type, param: err.code === 'request.invalid_body' ? 'messages' : null, code: CODES[err.code] ?? null };
}

/** A failure of the generation itself (provider unreachable, provider error, stopping…). */
export function generationError(message: string): OpenAiError {
  return { message, type: 'server_error', param: null, code: 'provider_error' };
}

export function sendOpenAiError(res: ServerResponse, requestId: string, status: number, error: OpenAiError, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.end();
  sendJson(res, status, { error }, { ...headers, 'X-Request-Id': requestId });
}
