/** The pairing payload of SPEC §2.5: exactly these two fields. A secret: it holds the token. */
export function pairingPayload(url: string, token: string): string {
  return JSON.stringify({ url, token });
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[?::1\]?)$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host);
}

/** True when a phone could not reach this URL (it points at the desktop's own loopback). */
export function isLoopbackUrl(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname);
  } catch {
    return false;
  }
}

export const LOOPBACK_WARNING =
  'This URL is the desktop\'s loopback address: a phone cannot reach it. Start a tunnel (cloudflared) and pair with the tunnel URL.';

/**
 * The "open in the phone's browser" link: the relay's own web client with the token in the
 * fragment (`<url>/#token=<token>`), which never reaches any server. A secret, like the payload.
 */
export function webClientLink(url: string, token: string): string {
  return `${url.replace(/\/+$/, '')}/#token=${encodeURIComponent(token)}`;
}
