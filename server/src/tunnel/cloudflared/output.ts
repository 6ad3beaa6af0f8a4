// What cloudflared prints, and what we read from it. It logs everything to stderr as
// `<RFC3339 time> <LEVEL> <message> key=value…` (colour codes only when stderr is a terminal).

// Quick-tunnel names are lowercase words joined by dashes, the same class as the `cloudflared`
// package's TryCloudflareHandler. Unlike that handler we only accept the URL inside the ASCII box
// `|  https://….trycloudflare.com  |`: other lines carry other https URLs, among them
// `failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": …`, which the
// package's bare regex would report as the tunnel.
const BOX_URL = /\|\s+(https:\/\/[a-z0-9]+(?:-[a-z0-9]+)*\.trycloudflare\.com)\/?\s+\|/;

/** The quick tunnel's public URL if this line is the box line that announces it. */
export function tunnelUrlFrom(line: string): string | undefined {
  return BOX_URL.exec(line)?.[1];
}

// Same lines the `cloudflared` package's ConnectionHandler keys on (`Registered tunnel connection
// connIndex=…`, a `terminated` line, `Unregistered tunnel connection connIndex=…`), plus the
// `Serve tunnel error` / `failed to serve tunnel connection` pair cloudflared prints when its one
// quick-tunnel connection drops before `Retrying connection in up to 1s`. Unregistered is tested
// first: it ends with the text of the connected line.
const LOST = /Unregistered tunnel connection|Connection terminated|Serve tunnel error|failed to serve tunnel connection/i;
const CONNECTED = /Registered tunnel connection/;

export function connectionSignal(line: string): 'connected' | 'lost' | undefined {
  if (LOST.test(line)) return 'lost';
  if (CONNECTED.test(line)) return 'connected';
  return undefined;
}

/** cloudflared's error levels (ERR, FTL, PNC): worth a warning in the host's log. */
export function isErrorLine(line: string): boolean {
  return /\s(ERR|FTL|PNC)\s/.test(line);
}
