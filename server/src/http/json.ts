import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export type HeaderMap = Readonly<Record<string, string | number>>;

/**
 * The one JSON writer: every JSON answer (results, CONTRACT errors, OpenAI errors, refused
 * handshakes, requests Node could not parse) gets the same framing, so a fix to it is made once.
 * The caller's headers go first; the framing headers always win.
 */
function framing(body: string): HeaderMap {
  return { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' };
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: HeaderMap = {}): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  for (const [name, v] of Object.entries({ ...headers, ...framing(body) })) res.setHeader(name, v);
  res.end(body);
}

/** 204: done, nothing to say (a delete, an answered action). */
export function sendNoContent(res: ServerResponse): void {
  res.statusCode = 204;
  res.setHeader('Cache-Control', 'no-store');
  res.end();
}

/**
 * The same answer written on a socket no ServerResponse owns (a refused WebSocket handshake, a
 * request Node could not parse). Nothing more is read from such a socket, so it always closes.
 */
export function writeJsonToSocket(socket: Duplex, status: number, value: unknown, headers: HeaderMap = {}): void {
  const body = JSON.stringify(value);
  const head = Object.entries({ ...headers, ...framing(body), Connection: 'close' })
    .map(([name, v]) => `${name}: ${v}`)
    .join('\r\n');
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head}\r\n\r\n${body}`);
}
