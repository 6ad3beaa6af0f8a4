import { describe, expect, it } from 'vitest';
import { connectionSignal, tunnelUrlFrom } from '../../server/src/tunnel/cloudflared/output';
import { LineSplitter } from '../../server/src/tunnel/lines';

// Lines as cloudflared prints them (cmd/cloudflared/tunnel/quick_tunnel.go, connection/*.go).
const banner = [
  '2024-05-01T10:00:00Z ERR Configuration file /tmp/deskrelay-cloudflared-x/config.yml was empty',
  '2024-05-01T10:00:00Z INF Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out. However, be aware that these account-less Tunnels have no uptime guarantee, are subject to the Cloudflare Online Services Terms of Use (https://www.cloudflare.com/website-terms/), and Cloudflare reserves the right to investigate your use of Tunnels for violations of such terms. If you intend to use Tunnels in production you should use a pre-created named tunnel by following: https://developers.cloudflare.com/cloudflare-one/connections/connect-apps',
  '2024-05-01T10:00:00Z INF Requesting new quick Tunnel on trycloudflare.com...',
  'failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": dial tcp: lookup api.trycloudflare.com on 127.0.0.53:53: server misbehaving',
  '2024-05-01T10:00:01Z INF +--------------------------------------------------------------------------------------------+',
  '2024-05-01T10:00:01Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |',
  '2024-05-01T10:00:01Z INF |  https://seasonal-deck-organisms-sf.trycloudflare.com                                      |',
  '2024-05-01T10:00:01Z INF +--------------------------------------------------------------------------------------------+',
  '2024-05-01T10:00:01Z INF cloudflared will not automatically update when run from the shell. To enable auto-updates, run cloudflared as a service: https://developers.cloudflare.com/cloudflare-one/connections/connect-apps/run-tunnel/as-a-service/',
];

describe('tunnelUrlFrom', () => {
  it('takes only the URL inside the box, ignoring the other https URLs cloudflared prints', () => {
    const found = banner.map(tunnelUrlFrom).filter(Boolean);
    expect(found).toEqual(['https://seasonal-deck-organisms-sf.trycloudflare.com']);
  });

  it('reads the box line with colour codes (stderr on a terminal)', () => {
    expect(tunnelUrlFrom(new LineSplitter().push('\x1b[90m2024-05-01T10:00:01Z\x1b[0m \x1b[32mINF\x1b[0m |  https://a-b.trycloudflare.com  |\n')[0])).toBe(
      'https://a-b.trycloudflare.com',
    );
  });

  it('does not accept a URL outside a box, or another domain inside one', () => {
    expect(tunnelUrlFrom('INF visit https://a-b-c-d.trycloudflare.com now')).toBeUndefined();
    expect(tunnelUrlFrom('INF |  https://a-b-c-d.trycloudflare.com.evil.example  |')).toBeUndefined();
  });
});

describe('connectionSignal', () => {
  it('knows connected from lost', () => {
    expect(
      connectionSignal(
        '2024-05-01T10:00:02Z INF Registered tunnel connection connIndex=0 connection=4b3c0c8e-8e1b-4e3d-9c52-d0e6f3a2b1c0 event=0 ip=198.41.200.193 location=ams16 protocol=quic',
      ),
    ).toBe('connected');
    expect(connectionSignal('2024-05-01T10:05:00Z INF Unregistered tunnel connection connIndex=0 event=0 ip=198.41.200.193')).toBe('lost');
    expect(connectionSignal('2024-05-01T10:05:00Z ERR Connection terminated error="context canceled" connIndex=0')).toBe('lost');
    expect(connectionSignal('2024-05-01T10:05:00Z ERR Serve tunnel error error="timeout: no recent network activity" connIndex=0 event=0 ip=198.41.200.193')).toBe('lost');
    expect(connectionSignal('2024-05-01T10:00:01Z INF Starting metrics server on 127.0.0.1:41234/metrics')).toBeUndefined();
  });
});

describe('LineSplitter', () => {
  it('joins lines split across chunks and drops CRs and blank lines', () => {
    const s = new LineSplitter();
    expect(s.push('2024 INF |  https://a-')).toEqual([]);
    expect(s.push('b.trycloudflare.com  |\r\n\nnext')).toEqual(['2024 INF |  https://a-b.trycloudflare.com  |']);
    expect(s.flush()).toEqual(['next']);
  });
});
