import { existsSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import sirv from 'sirv';

/**
 * The phone web client (`media/web`), served at `/` with sirv. No token is needed to load the
 * page; every API call it makes carries one. Only GET and HEAD outside `/v1` ever reach it, and
 * anything it does not have falls through to the CONTRACT 404.
 */

/** Strict headers for the page: only same-origin scripts, styles and connections. */
export const WEB_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    // The installable app: its manifest and its service worker (web/sw/sw.ts), same-origin only.
    "manifest-src 'self'",
    "worker-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-cache',
};

/**
 * Where `media/web` is: beside the bundle (`dist/cli.js`, `dist/extension.js` → `../media/web`)
 * or beside the source (`server/src/http/static.ts` → `../../../media/web`, for tests).
 */
export function findWebRoot(from: string = __dirname): string | undefined {
  for (const candidate of [join(from, '..', 'media', 'web'), join(from, '..', '..', '..', 'media', 'web')]) {
    if (existsSync(join(candidate, 'index.html'))) return resolve(candidate);
  }
  return undefined;
}

type Next = () => void;

/** The middleware, or undefined when the web client's files are not there (the relay then serves the API alone). */
export function webClient(root: string | undefined = findWebRoot()): ((req: IncomingMessage, res: ServerResponse, next: Next) => void) | undefined {
  if (!root) return undefined;
  const serve = sirv(root, {
    etag: true,
    dotfiles: false,
    // The build's precompressed copies (scripts/build-web.mjs): a phone downloads the page brotli-
    // or gzip-compressed. Only these files: the API's replies, streams above all, never are.
    brotli: true,
    gzip: true,
    setHeaders(res) {
      for (const [name, value] of Object.entries(WEB_SECURITY_HEADERS)) res.setHeader(name, value);
    },
  });
  return (req, res, next) => {
    const path = (req as IncomingMessage & { path?: string }).path ?? (req.url ?? '/').split('?')[0];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || path === '/v1' || path.startsWith('/v1/')) return next();
    serve(req, res, next);
  };
}
