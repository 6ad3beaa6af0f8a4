/**
 * Raw HTTP on loopback, so tests see exactly what a phone client would: status, headers and
 * the body's bytes in the order they arrived.
 */
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  /** Body chunks with the time (ms since the request) each arrived. */
  chunks: { at: number; text: string }[];
}

export interface RequestOptions {
  method?: string;
  headers?: OutgoingHttpHeaders | [string, string][];
  body?: string | Buffer;
  /** Abort after this many ms, or when the predicate on the body so far says so. */
  abortWhen?: (bodySoFar: string) => boolean;
  timeoutMs?: number;
}

export function send(baseUrl: string, path: string, options: RequestOptions = {}): Promise<Reply> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: path,
        method: options.method ?? 'GET',
        // Pairs become Node's flat raw-header list, which can repeat a header.
        headers: Array.isArray(options.headers) ? (options.headers.flat() as never) : options.headers,
        agent: false,
      },
      (res) => {
        const chunks: { at: number; text: string }[] = [];
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          chunks.push({ at: Date.now() - started, text });
          body += text;
          if (options.abortWhen?.(body)) {
            req.destroy();
            finish();
          }
        });
        let finished = false;
        const finish = () => {
          if (finished) return;
          finished = true;
          clearTimeout(timer);
          let json: any;
          try {
            json = JSON.parse(body);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json, chunks });
        };
        res.on('end', finish);
        res.on('close', finish);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`request ${options.method ?? 'GET'} ${path} timed out`));
    }, options.timeoutMs ?? 15_000);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    if (options.body !== undefined) {
      // Node sends no length for a body on methods such as OPTIONS: its bytes would read as a second request.
      if (!req.hasHeader('content-length') && !req.hasHeader('transfer-encoding')) req.setHeader('Content-Length', Buffer.byteLength(options.body));
      req.write(options.body);
    }
    req.end();
  });
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

export const chatBody = (content = 'Hello') => JSON.stringify({ messages: [{ role: 'user', content }] });

export function chatHeaders(token: string): OutgoingHttpHeaders {
  return { ...bearer(token), 'Content-Type': 'application/json', Accept: 'text/event-stream' };
}

/** Splits an SSE body the way SPEC §4.2 tells clients to: on blank lines, `data:` lines, JSON. */
export function parseEvents(body: string): any[] {
  return body
    .split('\n\n')
    .map((block) => block.split('\n').find((line) => line.startsWith('data:')))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice(5).trim()));
}

/** A loopback port that nothing listens on (fetch refuses some well-known ports such as 9 outright). */
export async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as import('node:net').AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}
