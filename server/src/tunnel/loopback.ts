import net from 'node:net';
import { TunnelError } from './errors';

/**
 * Where an agent forwards to: the relay on loopback, whatever it is bound to. A wildcard bind
 * (0.0.0.0, ::) also listens on 127.0.0.1, and loopback is the one address that is always there
 * and never reaches anyone else: a LAN address can change under a running tunnel (DHCP, Wi-Fi)
 * and, with a wildcard bind, "the LAN address" is a guess (a VPN or docker bridge comes first as
 * often as not). A relay bound to one specific non-loopback address is not on loopback at all,
 * and the tunnel refuses rather than forwarding over the network.
 */
export function forwardUrl(boundAddress: string, port: number): string {
  const address = boundAddress.replace(/^\[|\]$/g, '').toLowerCase();
  if (address === '0.0.0.0' || address === '::' || address === '::ffff:0.0.0.0') return `http://127.0.0.1:${port}`;
  if (address === '::1') return `http://[::1]:${port}`;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (net.isIPv4(v4) && v4.startsWith('127.')) return `http://${v4}:${port}`;
  throw new TunnelError(
    `The tunnel forwards to DeskRelay on this machine's loopback address, but DeskRelay listens only on ${boundAddress}. ` +
      'Bind it to 127.0.0.1 (the default), or to 0.0.0.0 if the LAN must reach it too, then start the tunnel again.',
    [],
    'not-loopback',
  );
}

/** A loopback port free right now (for an agent's metrics or API port, which must not collide with another copy's). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
