/**
 * The tunnel helper: the user's own cloudflared running a quick tunnel to the relay.
 *
 *   const binary = findCloudflared({ explicitPath });        // throws TunnelError (path named, or install steps)
 *   const tunnel = new QuickTunnel({ binary, localUrl: 'http://127.0.0.1:53210', logger });
 *   tunnel.on('progress', (msg) => …);   // "Waiting for the tunnel to answer (12 s)…"
 *   tunnel.on('state', (s) => …);        // 'stopped' | 'starting' | 'up' | 'down'
 *   tunnel.on('down', (msg) => …);       // after 'up': cloudflared died or lost its connection
 *   const url = await tunnel.start();    // https://….trycloudflare.com, answering /v1/health
 *   await tunnel.restart();              // new cloudflared, NEW url: the phone must pair again
 *   await tunnel.stop();
 *   process.on('exit', stopAllTunnelsSync);
 *
 * Life cycle: start() → 'starting' → cloudflared prints the URL (limit 30 s) → GET <url>/v1/health
 * until 200 (limit 60 s, 530 and network errors retried) → 'up'. A start that fails rejects with
 * a TunnelError carrying cloudflared's last lines and leaves the state 'down'; stop() during start
 * makes start() reject. After 'up': cloudflared exiting emits 'down' and the tunnel is gone
 * (restart() for a new one); a lost connection (`Connection terminated`, `Unregistered tunnel
 * connection`) emits 'down' while cloudflared reconnects by itself, and the state returns to 'up'
 * on its next `Registered tunnel connection`, same URL.
 *
 * cloudflared runs with `--no-autoupdate`, an empty temp `--config` (a ~/.cloudflared/config.yml
 * would hijack the quick tunnel) and `--metrics 127.0.0.1:<free port>`, under a watchdog that
 * kills it when this process goes away (see watchdog.ts).
 *
 * Why not the `cloudflared` package's Tunnel class: it spawns the package's module-global binary
 * (`use()` changes it for every caller), hands events raw chunks rather than lines, reports any
 * trycloudflare.com URL (including api.trycloudflare.com from an error line), stops with SIGINT
 * only and offers no way to tie cloudflared's life to ours. We spawn directly and keep its
 * parsing knowledge (output.ts); the package still supplies install() and its install location.
 */
export { findCloudflared, installCloudflared, INSTALL_HELP, type FindOptions } from './find';
export { QuickTunnel, stopAllTunnelsSync, type QuickTunnelOptions, type TunnelState } from './quick-tunnel';
export { TunnelError } from './errors';
export type { ProbeOptions } from './probe';
