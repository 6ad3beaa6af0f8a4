import type { ServerResponse } from 'node:http';
import { sendJson } from '../../http/writers';
import type { Dialect } from '../../http/route';
import { errorLine } from './wire';

/**
 * Ollama's error shape, `{"error":"…"}`, with DeskRelay's status (401 token, 400 body, 412 no
 * provider, 429 too many streams…): what Ollama clients show their users. On a stream already
 * under way the refusal is Ollama's last line instead, so the client raises rather than ending
 * quietly.
 */
export const ollamaDialect: Dialect = {
  sendError(res, requestId, err) {
    sendOllamaError(res, requestId, err.status, err.message, err.headers);
  },
};

export function sendOllamaError(res: ServerResponse, requestId: string, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end(errorLine(message));
    return;
  }
  sendJson(res, status, { error: message }, { ...headers, 'X-Request-Id': requestId });
}
