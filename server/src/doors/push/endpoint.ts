import { HttpError } from '../../http/errors';

/**
 * The browsers' own push services, the only hosts the relay sends pushes to by default, so a
 * token holder cannot turn the desktop into a way to POST to any host it likes: Chrome, Edge on
 * Android and other Chromium browsers (FCM), Firefox (Mozilla autopush), Safari on macOS and iOS
 * (Apple), and Edge on Windows (WNS, a host under notify.windows.com). Port 443 only.
 */
export const PUSH_SERVICES: readonly string[] = ['fcm.googleapis.com', 'updates.push.services.mozilla.com', 'web.push.apple.com', '*.notify.windows.com'];

/** The endpoint's own limit: browsers' endpoints are a few hundred characters. */
export const MAX_ENDPOINT_CHARS = 2048;

/** `$DESKRELAY_PUSH_HOSTS`: more push services, comma-separated (a test's stand-in). */
export function pushHostsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.DESKRELAY_PUSH_HOSTS ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
}

/** `name` matches `pattern`: equal, or `*.suffix` for any name under suffix (not suffix itself). */
function hostMatches(pattern: string, name: string): boolean {
  if (pattern.startsWith('*.')) return name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1;
  return name === pattern;
}

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);

/**
 * A push subscription's endpoint as the relay will call it, or the refusal: an absolute `https:`
 * URL without credentials, on a known push service (or one of `extraHosts`, which may name a
 * port: `host:port`). The URL checked here is the one the push is sent to (parsed once).
 */
export function checkEndpoint(endpoint: unknown, extraHosts: readonly string[]): URL {
  if (typeof endpoint !== 'string' || endpoint === '') throw invalid('endpoint must be the https URL of the browser\'s push subscription.');
  if (endpoint.length > MAX_ENDPOINT_CHARS) throw invalid(`endpoint must be at most ${MAX_ENDPOINT_CHARS} characters.`);
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw invalid('endpoint must be an absolute https URL.');
  }
  if (url.protocol !== 'https:') throw invalid('endpoint must be an https URL: push services are only reached over TLS.');
  if (url.username !== '' || url.password !== '') throw invalid('endpoint must not carry a user name or password.');
  const name = url.hostname.toLowerCase();
  const known = url.port === '' && PUSH_SERVICES.some((p) => hostMatches(p, name));
  const extra = extraHosts.some((h) => (h.includes(':') && !h.startsWith('[') ? h === url.host.toLowerCase() : url.port === '' && hostMatches(h, name)));
  if (!known && !extra) {
    throw new HttpError(
      400,
      'push.endpoint_not_allowed',
      `The desktop sends pushes only to the browsers' push services (${PUSH_SERVICES.join(', ')}); ${url.hostname} is not one of them.`,
    );
  }
  return url;
}
